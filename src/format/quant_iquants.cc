// The table-grid formats: iq4_nl, iq4_xs and mxfp4. Each element is a 4-bit index into a fixed int8
// grid (quant_tables.h) times a block scale.
//
// Layouts (bytes):
//   iq4_nl {f16 d; u8 qs[16]}                                             18 bytes, 32 elements
//   mxfp4  {u8 e; u8 qs[16]}                                              17 bytes, 32 elements
//   iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}             136 bytes, 256 elements
// iq4_nl / mxfp4: byte j holds element j's index in its low nibble and element j+16's in its high one
// (as q4_0); value = d * kIq4nlValues[i], resp. kMxfp4Values[i] * 2^(e - 128). iq4_xs: eight sub-blocks
// of 32, sub-block ib laid out like an iq4_nl block in qs[16ib..16ib+16], value = (d * sc) *
// kIq4nlValues[i] with sc the six-bit sub-block scale minus 32 (quant_tables.h, Iq4xsScale).
//
// Quantization (ember's own, not bit-identical to ggml): iq4_nl scales are searched like the K-quants'
// (the block's extreme placed at a sweep of grid positions near either end, each candidate refit by
// least squares for its nearest-grid codes, then Lloyd passes); iq4_xs codes those sub-block scales
// against an fp16 super-block step with a +-1 neighbour search; mxfp4 tries the four power-of-two scales
// around "the extreme on the grid's top" and keeps the one with the least squared error.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "format/quant_internal.h"
#include "format/quant_tables.h"

namespace ember::quant_internal {
namespace {

using quant_tables::kIq4nlValues;
using quant_tables::kMxfp4Values;

constexpr int kQK = 32;
constexpr int kQK_K = 256;
constexpr int kIq4Zero = 8;  // the grid entry nearest 0 (value 1): what an all-zero block stores

// Index of the kIq4nlValues entry nearest v (the lower one on a tie; NaN -> 0).
inline int NearestIq4(float v) {
  int idx = 0;
  for (int k = 0; k < 15; ++k) idx += v > 0.5f * static_cast<float>(kIq4nlValues[k] + kIq4nlValues[k + 1]);
  return idx;
}

// Codes x/scale -> nearest grid entry, then the least-squares scale for them (*refit); returns the
// reduction of the squared error below sum(x^2) that *refit achieves (larger is better).
double Iq4Candidate(const float* x, int n, float scale, float* refit) {
  double sxv = 0, svv = 0;
  for (int i = 0; i < n; ++i) {
    const double v = kIq4nlValues[NearestIq4(x[i] / scale)];
    sxv += static_cast<double>(x[i]) * v;
    svv += v * v;
  }
  *refit = svv > 0 ? static_cast<float>(sxv / svv) : 0.0f;
  return svv > 0 ? sxv * sxv / svv : 0.0;
}

// The block scale s of x ~= s * grid[code]: the largest-magnitude element placed at grid positions
// from the end value to about one grid step inside (and slightly beyond, clipping it), near either
// end of the grid (so s may take either sign); 0 for an all-zero block.
float FitIq4(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = max / static_cast<float>(kIq4nlValues[0]);
  double best_gain = -1.0;
  for (const float end : {static_cast<float>(kIq4nlValues[0]), static_cast<float>(kIq4nlValues[15])}) {
    for (int t = -3; t <= 24; t += 3) {
      const float start = max / (end - std::copysign(static_cast<float>(t), end));
      if (!(start != 0.0f) || !std::isfinite(start)) continue;
      float scale;
      const double gain = Iq4Candidate(x, n, start, &scale);
      if (scale != 0.0f && gain > best_gain) {
        best_gain = gain;
        best = scale;
      }
    }
  }
  for (int pass = 0; pass < 2; ++pass) {  // Lloyd passes on the winner
    float scale;
    const double gain = Iq4Candidate(x, n, best, &scale);
    if (scale == 0.0f || !(gain > best_gain)) break;
    best_gain = gain;
    best = scale;
  }
  return best;
}

// Nearest-grid codes of x for `scale` and their squared error.
double Iq4Assign(const float* x, int n, float scale, int* codes) {
  double err = 0;
  for (int i = 0; i < n; ++i) {
    codes[i] = scale != 0.0f ? NearestIq4(x[i] / scale) : kIq4Zero;
    const double diff = static_cast<double>(scale) * kIq4nlValues[codes[i]] - x[i];
    err += diff * diff;
  }
  return err;
}

void PackNibbles16(const int* codes, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
}

void QuantIq4nlBlock(const float* x, uint8_t* blk) {
  const uint16_t dh = F32ToFp16(ClampToHalfRange(FitIq4(x, kQK)));
  int codes[kQK];
  Iq4Assign(x, kQK, Fp16ToF32(dh), codes);
  StoreHalf(blk, dh);
  PackNibbles16(codes, blk + 2);
}

void QuantIq4xsBlock(const float* x, uint8_t* blk) {
  float scales[8];
  float max_scale = 0.0f;  // signed scale of largest magnitude
  for (int j = 0; j < 8; ++j) {
    scales[j] = FitIq4(x + kQK * j, kQK);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  const uint16_t dh = SuperBlockStep(max_scale, -32.0f);
  const float d = Fp16ToF32(dh);
  StoreHalf(blk, dh);
  uint32_t scales_h = 0;
  std::memset(blk + 4, 0, 4);
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kQK * j;
    const int s0 = d != 0.0f ? RoundClamp(scales[j] / d, -32, 31) : 0;
    double best_err = INFINITY;
    int best = s0, codes[kQK] = {}, cand[kQK];
    for (const int s : {s0, s0 - 1, s0 + 1}) {
      if (s < -32 || s > 31) continue;
      const double err = Iq4Assign(xs, kQK, d * static_cast<float>(s), cand);
      if (err < best_err || best_err == INFINITY) {
        best_err = err;
        best = s;
        std::memcpy(codes, cand, sizeof(cand));
      }
    }
    const int ls = best + 32;
    blk[4 + j / 2] |= static_cast<uint8_t>((ls & 15) << (4 * (j % 2)));
    scales_h |= static_cast<uint32_t>(ls >> 4) << (2 * j);
    PackNibbles16(codes, blk + 8 + 16 * j);
  }
  StoreHalf(blk + 2, static_cast<uint16_t>(scales_h));
}

// Index of the kMxfp4Values entry nearest v (the smaller magnitude on a tie; 0 for NaN and for values
// that round to zero, never the negative zero 8).
inline int NearestFp4(float v) {
  static constexpr float kMid[7] = {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f};
  const float a = std::fabs(v);
  int m = 0;
  for (float t : kMid) m += a > t;
  return m != 0 && v < 0 ? m | 8 : m;
}

// Squared error of x coded with scale E8M0ToF32Half(e); fills codes.
double Fp4Assign(const float* x, uint8_t e, int* codes) {
  const float s = quant_tables::E8M0ToF32Half(e);
  double err = 0;
  for (int i = 0; i < kQK; ++i) {
    codes[i] = NearestFp4(x[i] / s);
    const double diff = static_cast<double>(kMxfp4Values[codes[i]] * s) - x[i];
    err += diff * diff;
  }
  return err;
}

// The scale exponent: with 2^k <= amax < 2^(k+1), the grid's top (12 * 2^(e-128)) at 0.75 to 6 times
// 2^k, i.e. e = k + 124 .. k + 127, clamped to [0, 252] (beyond 252 the top value would overflow f32).
void QuantMxfp4Block(const float* x, uint8_t* blk) {
  float amax = 0.0f;
  for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  int codes[kQK], cand[kQK];
  uint8_t best_e = 0;
  if (amax == 0.0f) {
    std::fill(codes, codes + kQK, 0);
  } else {
    const int k = std::ilogb(amax);
    double best_err = INFINITY;
    for (int e = std::clamp(k + 124, 0, 252); e <= std::clamp(k + 127, 0, 252); ++e) {
      const double err = Fp4Assign(x, static_cast<uint8_t>(e), cand);
      if (err < best_err) {
        best_err = err;
        best_e = static_cast<uint8_t>(e);
        std::memcpy(codes, cand, sizeof(cand));
      }
    }
  }
  blk[0] = best_e;
  PackNibbles16(codes, blk + 1);
}

}  // namespace

void DequantIQ4_NL(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 18, dst += kQK) {
    const float d = LoadHalf(src);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(kIq4nlValues[src[2 + j] & 0xF]);
      dst[j + 16] = d * static_cast<float>(kIq4nlValues[src[2 + j] >> 4]);
    }
  }
}

void DequantIQ4_XS(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 136, dst += kQK_K) {
    const float d = LoadHalf(src);
    for (int ib = 0; ib < 8; ++ib) {
      const float dl = d * static_cast<float>(quant_tables::Iq4xsScale(src, ib));
      const uint8_t* qs = src + 8 + 16 * ib;
      float* y = dst + kQK * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

void DequantMXFP4(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 17, dst += kQK) {
    const float d = quant_tables::E8M0ToF32Half(src[0]);
    for (int j = 0; j < 16; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[src[1 + j] & 0xF]) * d;
      dst[j + 16] = static_cast<float>(kMxfp4Values[src[1 + j] >> 4]) * d;
    }
  }
}

void QuantIQ4_NL(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantIq4nlBlock(src + b * kQK, dst + b * 18);
}

void QuantIQ4_XS(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantIq4xsBlock(src + b * kQK_K, dst + b * 136);
}

void QuantMXFP4(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantMxfp4Block(src + b * kQK, dst + b * 17);
}

}  // namespace ember::quant_internal
