// Scalar row-dot kernels: the reference every SIMD path must match bitwise. They follow the lane
// order documented in dot_kernels.h literally, so they read as the specification of that order.
#include <cmath>
#include <cstring>

#include "format/quant_tables.h"
#include "kernels/dot_kernels.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

inline float H(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return Fp16ToF32(h); }
inline float Bf(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return Bf16ToF32(h); }

// ---- F32 / F16 / BF16: 32 lanes --------------------------------------------------------------
template <float (*Load)(const uint8_t*, int64_t)>
float DotFloat(const uint8_t* row, const float* x, int64_t n) {
  float acc[32] = {};
  for (int64_t c = 0; c < n; c += 32) {
    for (int l = 0; l < 32; ++l) {
      const int64_t i = c + l;
      const float w = i < n ? Load(row, i) : 0.0f, a = i < n ? x[i] : 0.0f;
      acc[l] = std::fma(w, a, acc[l]);
    }
  }
  float v[8];
  for (int l = 0; l < 8; ++l) v[l] = (acc[l] + acc[8 + l]) + (acc[16 + l] + acc[24 + l]);
  return Hsum8(v);
}
float LoadF32(const uint8_t* r, int64_t i) { float f; std::memcpy(&f, r + 4 * i, 4); return f; }
float LoadF16(const uint8_t* r, int64_t i) { return H(r + 2 * i); }
float LoadBF16(const uint8_t* r, int64_t i) { return Bf(r + 2 * i); }

// ---- 32-element blocks -------------------------------------------------------------------------
// Decodes block b into signed integer weights w[32] (the value is d * w + m), returns d and m.
struct Block32 { int w[32]; float d; float m; };

template <GgmlType T> Block32 Decode32(const uint8_t* p) {
  Block32 b{};
  if constexpr (T == GgmlType::MXFP4) {
    b.d = quant_tables::E8M0ToF32Half(p[0]);
  } else {
    b.d = H(p);
  }
  if constexpr (T == GgmlType::IQ4_NL || T == GgmlType::MXFP4) {  // 4-bit indexes into an int8 grid
    const int8_t* grid = T == GgmlType::IQ4_NL ? quant_tables::kIq4nlValues : quant_tables::kMxfp4Values;
    const uint8_t* qs = p + (T == GgmlType::IQ4_NL ? 2 : 1);
    for (int j = 0; j < 16; ++j) { b.w[j] = grid[qs[j] & 15]; b.w[j + 16] = grid[qs[j] >> 4]; }
  } else if constexpr (T == GgmlType::Q8_0) {
    for (int j = 0; j < 32; ++j) b.w[j] = static_cast<int8_t>(p[2 + j]);
  } else if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q4_1) {
    const int off = T == GgmlType::Q4_0 ? 8 : 0;
    const uint8_t* qs = p + (T == GgmlType::Q4_0 ? 2 : 4);
    if (T == GgmlType::Q4_1) b.m = H(p + 2);
    for (int j = 0; j < 16; ++j) { b.w[j] = (qs[j] & 15) - off; b.w[j + 16] = (qs[j] >> 4) - off; }
  } else {  // Q5_0 / Q5_1
    const int off = T == GgmlType::Q5_0 ? 16 : 0;
    const uint8_t* qhp = p + (T == GgmlType::Q5_0 ? 2 : 4);
    if (T == GgmlType::Q5_1) b.m = H(p + 2);
    uint32_t qh; std::memcpy(&qh, qhp, 4);
    const uint8_t* qs = qhp + 4;
    for (int j = 0; j < 16; ++j) {
      b.w[j] = ((qs[j] & 15) | (((qh >> j) & 1) << 4)) - off;
      b.w[j + 16] = ((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - off;
    }
  }
  return b;
}

template <GgmlType T> float Dot32(const uint8_t* row, const ActRow& a, int64_t n) {
  constexpr bool kMin = T == GgmlType::Q4_1 || T == GgmlType::Q5_1;
  const uint32_t bytes = TypeInfo(T).block_bytes;
  const int64_t nb = n / 32;
  float acc[8] = {};
  for (int64_t g = 0; g < nb; g += 8) {
    for (int l = 0; l < 8; ++l) {
      const int64_t b = g + l;
      float dw = 0, dx = 0, m = 0, s = 0;
      int32_t isum = 0;
      if (b < nb) {
        const Block32 blk = Decode32<T>(row + b * bytes);
        for (int j = 0; j < 32; ++j) isum += blk.w[j] * a.q[b * 32 + j];
        dw = blk.d; dx = a.d[b]; m = blk.m;
        if (kMin) s = a.s[b];
      }
      acc[l] = std::fma(dw * dx, static_cast<float>(isum), acc[l]);
      if (kMin) acc[l] = std::fma(m, s, acc[l]);
    }
  }
  return Hsum8(acc);
}

// ---- K-quants (256-element super-blocks) -------------------------------------------------------
// Integer weights per element (the value is d * sc[j/32] * q - dmin * mn[j/32]) for Q4_K / Q5_K.
struct BlockK { int q[256]; int sc[8]; int mn[8]; float d; float dmin; };

inline void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; return; }
  *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
  *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
}

template <GgmlType T> BlockK DecodeK(const uint8_t* p) {
  BlockK b{};
  b.d = H(p); b.dmin = H(p + 2);
  const uint8_t* scales = p + 4;
  for (int j = 0; j < 8; ++j) ScaleMinK4(j, scales, &b.sc[j], &b.mn[j]);
  const uint8_t* qh = p + 16;                                    // Q5_K only
  const uint8_t* qs = p + (T == GgmlType::Q5_K ? 48 : 16);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
      if (T == GgmlType::Q5_K) {
        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      b.q[64 * c + l] = lo;
      b.q[64 * c + 32 + l] = hi;
    }
  }
  return b;
}

template <GgmlType T> float DotK45(const uint8_t* row, const ActRow& a, int64_t n) {
  const uint32_t bytes = TypeInfo(T).block_bytes;
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const BlockK k = DecodeK<T>(row + b * bytes);
    const int8_t* x = a.q + b * 256;
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) s += k.q[32 * j + l] * x[32 * j + l];
      isum += k.sc[j] * s;
      msum += k.mn[j] * (a.sum[b * 16 + 2 * j] + a.sum[b * 16 + 2 * j + 1]);
    }
    const float dy = a.d[b];
    acc = std::fma(k.d * dy, static_cast<float>(isum), acc);
    acc = std::fma(-(k.dmin * dy), static_cast<float>(msum), acc);
  }
  return acc;
}

float DotQ6K(const uint8_t* row, const ActRow& a, int64_t n) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 210;
    const uint8_t *ql = p, *qh = p + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
    const int8_t* x = a.q + b * 256;
    int32_t isum = 0;
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t qlb = ql[64 * half + l + 32 * (k & 1)];
      const int q = ((k < 2 ? qlb & 15 : qlb >> 4) | (((qh[32 * half + l] >> (2 * k)) & 3) << 4)) - 32;
      isum += sc[e / 16] * q * x[e];
    }
    acc = std::fma(H(p + 208) * a.d[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// Q2_K: element e = 128h + 32k + l has q = bits 2k..2k+1 of qs[32h + l]; sub-block j = e/16 has scale
// sc[j] & 15 and min sc[j] >> 4. Same accumulation as Q4_K/Q5_K.
float DotQ2K(const uint8_t* row, const ActRow& a, int64_t n) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 84;
    const uint8_t *sc = p, *qs = p + 16;
    const int8_t* x = a.q + b * 256;
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t s = 0;
      for (int e = 16 * j; e < 16 * j + 16; ++e) s += ((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) * x[e];
      isum += (sc[j] & 15) * s;
      msum += (sc[j] >> 4) * a.sum[b * 16 + j];
    }
    const float dy = a.d[b];
    acc = std::fma(H(p + 80) * dy, static_cast<float>(isum), acc);
    acc = std::fma(-(H(p + 82) * dy), static_cast<float>(msum), acc);
  }
  return acc;
}

// Q3_K: Q2_K's low bits plus a third bit, bit 4h + k of hmask[l], so q - 4 is -4..3; signed six-bit
// sub-block scales (minus 32). Same accumulation as Q6_K.
float DotQ3K(const uint8_t* row, const ActRow& a, int64_t n) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 110;
    const uint8_t *hm = p, *qs = p + 32;
    int8_t sc[16];
    quant_tables::UnpackQ3KScales(p + 96, sc);
    const int8_t* x = a.q + b * 256;
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t s = 0;
      for (int e = 16 * j; e < 16 * j + 16; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int q = ((qs[32 * h + l] >> (2 * k)) & 3) | (((hm[l] >> (4 * h + k)) & 1) << 2);
        s += (q - 4) * x[e];
      }
      isum += sc[j] * s;
    }
    acc = std::fma(H(p + 108) * a.d[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// IQ4_XS: eight sub-blocks of 32 laid out like IQ4_NL blocks, signed six-bit scales (minus 32). Same
// accumulation as Q6_K.
float DotIQ4XS(const uint8_t* row, const ActRow& a, int64_t n) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 136;
    const int8_t* x = a.q + b * 256;
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = p + 8 + 16 * ib;
      int32_t s = 0;
      for (int j = 0; j < 16; ++j) {
        s += quant_tables::kIq4nlValues[qs[j] & 15] * x[32 * ib + j];
        s += quant_tables::kIq4nlValues[qs[j] >> 4] * x[32 * ib + 16 + j];
      }
      isum += quant_tables::Iq4xsScale(p, ib) * s;
    }
    acc = std::fma(H(p) * a.d[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// ---- per-type entry points ---------------------------------------------------------------------
template <float (*Dot)(const uint8_t*, const ActRow&, int64_t)>
void Tile(const uint8_t* row, int64_t n, const ActRow* acts, int n_acts, float* out, int64_t stride) {
  for (int j = 0; j < n_acts; ++j) out[j * stride] = Dot(row, acts[j], n);
}
template <float (*Load)(const uint8_t*, int64_t)>
float DotFloatRow(const uint8_t* row, const ActRow& a, int64_t n) { return DotFloat<Load>(row, a.f, n); }

}  // namespace

DotFn ReferenceDotFn(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return Tile<DotFloatRow<LoadF32>>;
    case GgmlType::F16: return Tile<DotFloatRow<LoadF16>>;
    case GgmlType::BF16: return Tile<DotFloatRow<LoadBF16>>;
    case GgmlType::Q8_0: return Tile<Dot32<GgmlType::Q8_0>>;
    case GgmlType::Q4_0: return Tile<Dot32<GgmlType::Q4_0>>;
    case GgmlType::Q4_1: return Tile<Dot32<GgmlType::Q4_1>>;
    case GgmlType::Q5_0: return Tile<Dot32<GgmlType::Q5_0>>;
    case GgmlType::Q5_1: return Tile<Dot32<GgmlType::Q5_1>>;
    case GgmlType::Q4_K: return Tile<DotK45<GgmlType::Q4_K>>;
    case GgmlType::Q5_K: return Tile<DotK45<GgmlType::Q5_K>>;
    case GgmlType::Q6_K: return Tile<DotQ6K>;
    case GgmlType::IQ4_NL: return Tile<Dot32<GgmlType::IQ4_NL>>;
    case GgmlType::MXFP4: return Tile<Dot32<GgmlType::MXFP4>>;
    case GgmlType::Q2_K: return Tile<DotQ2K>;
    case GgmlType::Q3_K: return Tile<DotQ3K>;
    case GgmlType::IQ4_XS: return Tile<DotIQ4XS>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels
