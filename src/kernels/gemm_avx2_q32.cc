// AVX2 GEMM kernels for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (see gemm_kernels.h): 8 weight rows x up to 16
// tokens, one f32 lane per weight row.
//
// Per 32-block b the 8 rows' quants are transposed once into 8 vectors V_k whose int32 lane r holds
// elements 4k..4k+3 of row r (unsigned 0..15 / 0..31 for the 4/5-bit types, |w| for Q8_0). For each
// token the matching 4 activation bytes are broadcast (a load, no ALU work) and vpmaddubsw'd against
// V_k; the int16 results are added and widened once per block, so lane r ends up with the exact
// integer dot of row r's block b — no horizontal reduction at all. From there the f32 steps are
// dot_kernels.h's: acc_l = fma(dw*dx, float(isum), acc_l) [then fma(m, s, acc_l)] with l = b % 8 kept
// per token in an L1 array (stripe l is touched every 8th block, so the store/load round trip is
// hidden), and at the end Hsum8 over the 8 stripes as lane-wise vector adds in the same tree. Every
// (row, token) therefore sees the row kernels' operation sequence and is bitwise equal to them.
//
// Blocks past the row's end (a partial last group of 8) are skipped: the reference adds fma(0, 0, acc)
// there, which returns acc unchanged (acc is never -0: it starts at +0 and a sum is -0 only if both
// addends are), so skipping is the same result.
#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/gemm_kernels.h"

namespace ember::kernels::avx2 {
namespace {

template <GgmlType Ty> struct Traits;
// kQs: offset of the 4/8-bit quants in the block; kQh: of the Q5 high bits; kOffset: subtracted from
// the unsigned weights (through offset * sum(x)); kMin: block min (Q4_1/Q5_1) at byte 2.
template <> struct Traits<GgmlType::Q8_0> { static constexpr int kBytes = 34, kQs = 2, kQh = 0, kOffset = 0; static constexpr bool kMin = false, kHigh = false, kSigned = true; };
template <> struct Traits<GgmlType::Q4_0> { static constexpr int kBytes = 18, kQs = 2, kQh = 0, kOffset = 8; static constexpr bool kMin = false, kHigh = false, kSigned = false; };
template <> struct Traits<GgmlType::Q4_1> { static constexpr int kBytes = 20, kQs = 4, kQh = 0, kOffset = 0; static constexpr bool kMin = true, kHigh = false, kSigned = false; };
template <> struct Traits<GgmlType::Q5_0> { static constexpr int kBytes = 22, kQs = 6, kQh = 2, kOffset = 16; static constexpr bool kMin = false, kHigh = true, kSigned = false; };
template <> struct Traits<GgmlType::Q5_1> { static constexpr int kBytes = 24, kQs = 8, kQh = 4, kOffset = 0; static constexpr bool kMin = true, kHigh = true, kSigned = false; };

EMBER_AVX2 inline __m256i Load2x128(const uint8_t* lo, const uint8_t* hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)), 1);
}

// 4x4 transpose of 32-bit elements within each 128-bit half: out[c] lane i (of each half) = in[i]
// lane c.
EMBER_AVX2 inline void Transpose4x4(const __m256i* in, __m256i* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(in[0], in[1]), t1 = _mm256_unpackhi_epi32(in[0], in[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(in[2], in[3]), t3 = _mm256_unpackhi_epi32(in[2], in[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// The 16 quant bytes at `off` of block b of the 8 rows as D[c], lane r = bytes 4c..4c+3 of row r.
EMBER_AVX2 inline void Transpose16(const uint8_t* p, size_t row_bytes, __m256i* d) {
  __m256i in[4];
  for (int r = 0; r < 4; ++r) in[r] = Load2x128(p + r * row_bytes, p + (r + 4) * row_bytes);
  Transpose4x4(in, d);
}

// Lane r = the 32-bit word at p + r * row_bytes.
EMBER_AVX2 inline __m256i Gather8U32(const uint8_t* p, size_t row_bytes) {
  uint32_t v[8];
  for (int r = 0; r < 8; ++r) std::memcpy(&v[r], p + r * row_bytes, 4);
  return _mm256_setr_epi32(static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]),
                           static_cast<int>(v[3]), static_cast<int>(v[4]), static_cast<int>(v[5]),
                           static_cast<int>(v[6]), static_cast<int>(v[7]));
}

// Lane r = the fp16 at p + r * row_bytes, widened. Packed in general-purpose registers (integer ALUs,
// off the SIMD ports the products saturate).
EMBER_AVX2 inline __m256 Gather8Fp16(const uint8_t* p, size_t row_bytes) {
  auto q4 = [&](int i) {
    return static_cast<uint64_t>(LoadU16(p + i * row_bytes)) |
           static_cast<uint64_t>(LoadU16(p + (i + 1) * row_bytes)) << 16 |
           static_cast<uint64_t>(LoadU16(p + (i + 2) * row_bytes)) << 32 |
           static_cast<uint64_t>(LoadU16(p + (i + 3) * row_bytes)) << 48;
  };
  const __m128i h = _mm_unpacklo_epi64(_mm_cvtsi64_si128(static_cast<long long>(q4(0))),
                                       _mm_cvtsi64_si128(static_cast<long long>(q4(4))));
  return _mm256_cvtph_ps(h);
}

// The Q5 fifth bits of elements 4k..4k+3 as 0x10 bytes, lane r from the 32-bit qh word of row r.
// rep[j] has byte j of each word replicated over the word; byte i of V_{2j} tests bit i of that
// byte, byte i of V_{2j+1} bit 4+i.
EMBER_AVX2 inline void HighBits(__m256i qh, __m256i* v) {
  const __m256i sel = _mm256_set1_epi32(static_cast<int>(0x80402010u));
  const __m256i bit = _mm256_set1_epi8(0x10);
  for (int j = 0; j < 4; ++j) {
    const __m256i idx = _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
                                                         0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                                        _mm256_set1_epi8(static_cast<char>(j)));
    const __m256i rep = _mm256_shuffle_epi8(qh, idx);
    // Bits 0..3 moved up to 4..7 within each byte (what leaks into the next byte is masked off).
    const __m256i lo = _mm256_and_si256(_mm256_slli_epi16(rep, 4), sel);
    const __m256i hi = _mm256_and_si256(rep, sel);
    v[2 * j] = _mm256_or_si256(v[2 * j], _mm256_min_epu8(lo, bit));
    v[2 * j + 1] = _mm256_or_si256(v[2 * j + 1], _mm256_min_epu8(hi, bit));
  }
}

// Block b of the 8 rows as V_k (see the top comment); for Q8_0 also the signed bytes in `sgn`.
template <GgmlType Ty>
EMBER_AVX2 inline void Prepare(const uint8_t* blk, size_t row_bytes, __m256i* v, __m256i* sgn) {
  using Tr = Traits<Ty>;
  if constexpr (Tr::kSigned) {
    __m256i lo[4], hi[4], a[4], c[4];
    for (int r = 0; r < 4; ++r) {
      lo[r] = Load2x128(blk + Tr::kQs + r * row_bytes, blk + Tr::kQs + (r + 4) * row_bytes);
      hi[r] = Load2x128(blk + Tr::kQs + 16 + r * row_bytes, blk + Tr::kQs + 16 + (r + 4) * row_bytes);
    }
    Transpose4x4(lo, a);
    Transpose4x4(hi, c);
    for (int k = 0; k < 4; ++k) {
      sgn[k] = a[k];
      sgn[k + 4] = c[k];
    }
    for (int k = 0; k < 8; ++k) v[k] = _mm256_sign_epi8(sgn[k], sgn[k]);
  } else {
    __m256i d[4];
    Transpose16(blk + Tr::kQs, row_bytes, d);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      v[c] = _mm256_and_si256(d[c], m4);
      v[c + 4] = _mm256_and_si256(_mm256_srli_epi16(d[c], 4), m4);
    }
    if constexpr (Tr::kHigh) HighBits(Gather8U32(blk + Tr::kQh, row_bytes), v);
  }
}

EMBER_AVX2 inline __m256i Bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The exact integer dots of the 8 rows' block against 32 activation bytes x, before the offset.
template <GgmlType Ty>
EMBER_AVX2 inline __m256i BlockDot(const __m256i* v, const __m256i* sgn, const int8_t* x) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (Traits<Ty>::kSigned) {
    // |w| * (x with w's sign) = w * x; a pair sum is at most 2*128*127 = 32512, so each maddubs
    // is widened on its own.
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    for (int k = 0; k < 8; k += 2) {
      const __m256i p0 = _mm256_maddubs_epi16(v[k], _mm256_sign_epi8(Bcast32(x + 4 * k), sgn[k]));
      const __m256i p1 = _mm256_maddubs_epi16(v[k + 1], _mm256_sign_epi8(Bcast32(x + 4 * k + 4), sgn[k + 1]));
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(p0, ones));
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, ones));
    }
    return _mm256_add_epi32(s0, s1);
  } else if constexpr (!Traits<Ty>::kHigh) {
    // 4-bit: a pair sum is at most 2*15*127 = 3810, so all 8 (30480) add up in int16.
    __m256i p[8];
    for (int k = 0; k < 8; ++k) p[k] = _mm256_maddubs_epi16(v[k], Bcast32(x + 4 * k));
    const __m256i s = _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3])),
                                       _mm256_add_epi16(_mm256_add_epi16(p[4], p[5]), _mm256_add_epi16(p[6], p[7])));
    return _mm256_madd_epi16(s, ones);
  } else {
    // 5-bit: a pair sum is at most 2*31*127 = 7874, so 4 of them (31496) add up in int16.
    __m256i p[8];
    for (int k = 0; k < 8; ++k) p[k] = _mm256_maddubs_epi16(v[k], Bcast32(x + 4 * k));
    const __m256i a = _mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3]));
    const __m256i b = _mm256_add_epi16(_mm256_add_epi16(p[4], p[5]), _mm256_add_epi16(p[6], p[7]));
    return _mm256_add_epi32(_mm256_madd_epi16(a, ones), _mm256_madd_epi16(b, ones));
  }
}

template <GgmlType Ty>
EMBER_AVX2 void Gemm32(const uint8_t* rows, size_t row_bytes, int64_t n_in, const ActRow* acts, int n_acts,
                       float* out, int64_t stride) {
  using Tr = Traits<Ty>;
  const int64_t nb = n_in / 32;
  __m256 acc[8][kGemmMaxTile];
  for (int l = 0; l < 8; ++l) {
    for (int t = 0; t < n_acts; ++t) acc[l][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = rows + b * Tr::kBytes;
    __m256i v[8], sgn[8];
    Prepare<Ty>(blk, row_bytes, v, sgn);
    const __m256 dw = Gather8Fp16(blk, row_bytes);
    __m256 m = _mm256_setzero_ps();
    if constexpr (Tr::kMin) m = Gather8Fp16(blk + 2, row_bytes);
    __m256* a = acc[b & 7];
    for (int t = 0; t < n_acts; ++t) {
      __m256i isum = BlockDot<Ty>(v, sgn, acts[t].q + b * 32);
      if constexpr (Tr::kOffset != 0) {
        constexpr int kShift = Tr::kOffset == 8 ? 3 : 4;  // subtract offset * sum(x)
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_set1_epi32(acts[t].sum[b]), kShift));
      }
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(acts[t].d[b]));
      a[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum), a[t]);
      if constexpr (Tr::kMin) a[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(acts[t].s[b]), a[t]);
    }
  }
  for (int t = 0; t < n_acts; ++t) {
    const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0][t], acc[4][t]), _mm256_add_ps(acc[2][t], acc[6][t])),
                                   _mm256_add_ps(_mm256_add_ps(acc[1][t], acc[5][t]), _mm256_add_ps(acc[3][t], acc[7][t])));
    _mm256_storeu_ps(out + t * stride, s);
  }
}

}  // namespace

GemmFn Block32GemmFn(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return Gemm32<GgmlType::Q8_0>;
    case GgmlType::Q4_0: return Gemm32<GgmlType::Q4_0>;
    case GgmlType::Q4_1: return Gemm32<GgmlType::Q4_1>;
    case GgmlType::Q5_0: return Gemm32<GgmlType::Q5_0>;
    case GgmlType::Q5_1: return Gemm32<GgmlType::Q5_1>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
