// AVX2 row-dot for the low-bit types: IQ4_NL and MXFP4 (32-element blocks against Q8_0 activations)
// and Q2_K, Q3_K, IQ4_XS (256-element super-blocks against Q8_K). Exact integer block sums formed in
// SIMD; the f32 part is dot_kernels.h's sequence (8 block lanes for the 32-element types, one scalar
// FMA chain per super-block for the others), so results are bitwise dot_ref.cc's.
//
// The table-grid types (IQ4_NL, IQ4_XS, MXFP4) look their 4-bit indexes up in the int8 grid with one
// `vpshufb` and multiply signed by signed with the sign trick, |w| * (x with w's sign): that needs
// |x| <= 127, which is all ActBatch produces (Q8_0 and Q8_K never quantize to -128). Q2_K / Q3_K keep
// their codes unsigned (Q3_K as q + 4, the offset removed through the per-16 activation sums).
#include <cmath>

#include "format/quant_tables.h"
#include "kernels/avx2_util.h"
#include "kernels/dot_kernels.h"

namespace ember::kernels::avx2 {
namespace {

// ---- IQ4_NL / MXFP4 ------------------------------------------------------------------------------

template <GgmlType Ty> struct GridTraits;
template <> struct GridTraits<GgmlType::IQ4_NL> { static constexpr int kBytes = 18, kQs = 2; };
template <> struct GridTraits<GgmlType::MXFP4> { static constexpr int kBytes = 17, kQs = 1; };

// The 16-entry int8 grid in both 128-bit lanes, for `vpshufb`.
EMBER_AVX2 inline __m256i GridTable(const int8_t* grid) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grid)));
}

// 16 index bytes -> 32 signed grid values in element order (low nibbles are elements 0..15, high 16..31).
EMBER_AVX2 inline __m256i LookUp(const uint8_t* qs, __m256i table) {
  const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i idx = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
  return _mm256_shuffle_epi8(table, idx);
}

// Signed 32-element dot as int16 pair sums: |w| * (x with w's sign) = w * x; |w|, |x| <= 127 keep
// each pair within 32258.
EMBER_AVX2 inline __m256i SignedPairs(__m256i w, const int8_t* xq) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
  return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

// v[i]: 8 int32 partials of block i -> lane l = total of block l (two hadd levels leave blocks 0..3 and
// 4..7 as [b0 b1 b2 b3 | b0 b1 b2 b3], see Combine8).
EMBER_AVX2 inline __m256i Reduce8(const __m256i* v) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return Combine8(a, b);
}

// MXFP4's dw for 8 blocks, lane-wise quant_tables::E8M0ToF32Half: the f32 bits (e - 1) << 23 for
// e >= 2, the subnormals 0x00200000 << e for e = 0, 1. Lanes past cnt get e = 0 (2^-128), which only
// ever meets dx = 0 and isum = 0 there: fma(0, 0, acc), as the reference's zero padding.
EMBER_AVX2 inline __m256 E8M0Half8(const uint8_t* first, int stride, int cnt) {
  uint64_t packed = 0;
  for (int l = 0; l < cnt; ++l) packed |= static_cast<uint64_t>(first[l * stride]) << (8 * l);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(packed)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
}

// The block scales dw of blocks g..g+cnt-1: fp16 d (zero past cnt), or MXFP4's halved E8M0 scale.
template <GgmlType Ty>
EMBER_AVX2 inline __m256 BlockScales(const uint8_t* first, int cnt) {
  constexpr int kBytes = GridTraits<Ty>::kBytes;
  if constexpr (Ty == GgmlType::MXFP4) {
    return E8M0Half8(first, kBytes, cnt);
  } else {
    alignas(16) uint16_t h[8] = {};
    for (int l = 0; l < cnt; ++l) h[l] = LoadU16(first + l * kBytes);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  }
}

template <bool kFull>
EMBER_AVX2 inline __m256 Load8F(const float* src, int cnt) {
  if constexpr (kFull) return _mm256_loadu_ps(src);
  alignas(32) float v[8] = {};
  for (int l = 0; l < cnt; ++l) v[l] = src[l];
  return _mm256_load_ps(v);
}

// Blocks g..g+cnt-1 (cnt <= 8) for T tokens: weights unpacked once, then per token the 8 block sums in
// lane order and acc = fma(dw*dx, float(isum), acc); lanes past cnt see fma(0, 0, acc).
template <GgmlType Ty, int T, bool kFull>
EMBER_AVX2 inline void GridGroup(const uint8_t* row, int64_t g, int cnt, const ActRow* acts, __m256i table,
                                 __m256* acc) {
  using Tr = GridTraits<Ty>;
  const uint8_t* first = row + g * Tr::kBytes;
  __m256i w[8];
  for (int i = 0; i < 8; ++i) w[i] = (kFull || i < cnt) ? LookUp(first + i * Tr::kBytes + Tr::kQs, table) : __m256i{};
  const __m256 dw = BlockScales<Ty>(first, cnt);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int t = 0; t < T; ++t) {
    const int8_t* x = acts[t].q + g * 32;
    __m256i part[8];
    for (int i = 0; i < 8; ++i) {
      part[i] = (kFull || i < cnt) ? _mm256_madd_epi16(SignedPairs(w[i], x + 32 * i), ones) : _mm256_setzero_si256();
    }
    const __m256 scale = _mm256_mul_ps(dw, Load8F<kFull>(acts[t].d + g, cnt));
    acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(Reduce8(part)), acc[t]);
  }
}

template <GgmlType Ty, int T>
EMBER_AVX2 void GridDotT(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  constexpr int kBytes = GridTraits<Ty>::kBytes;
  const __m256i table =
      GridTable(Ty == GgmlType::IQ4_NL ? quant_tables::kIq4nlValues : quant_tables::kMxfp4Values);
  const int64_t nb = n / 32, full = nb / 8 * 8;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t g = 0; g < full; g += 8) {
    PrefetchAhead(row + g * kBytes, 8 * kBytes);
    GridGroup<Ty, T, true>(row, g, 8, acts, table, acc);
  }
  if (full < nb) GridGroup<Ty, T, false>(row, full, static_cast<int>(nb - full), acts, table, acc);
  for (int t = 0; t < T; ++t) out[t * stride] = Hsum(acc[t]);
}

// ---- Q2_K / Q3_K / IQ4_XS --------------------------------------------------------------------------

// Q2_K/Q3_K: sixteen int16 sub-block scales (natural order) -> for half h (elements 128h..) and part k
// (32 elements 128h + 32k..), scale 8h + 2k in the low 128-bit lane and 8h + 2k + 1 in the high one.
EMBER_AVX2 inline __m256i PartScales(__m256i sc16, int h, int k) {
  // (Two literal immediates: a computed one does not compile at -O0.)
  const __m256i sch = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xEE);
  const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * k + 3) << 8) | (4 * k + 2))),
                                        _mm_set1_epi16(static_cast<int16_t>(((4 * k + 1) << 8) | (4 * k))));
  return _mm256_shuffle_epi8(sch, pick);
}

// Q2_K and Q3_K: element 128h + 32k + l takes bits 2k..2k+1 of qs[32h + l]; Q3_K adds bit 4h + k of
// hmask[l] as bit 2 (q + 4 = 0..7, unsigned). Per token: isum over the 8 parts of 32 elements, and for
// Q2_K msum (mins against the per-16 sums), for Q3_K the 4 * Σ sc_j S_j correction.
template <bool kQ3, int T>
EMBER_AVX2 void DotQ23KT(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  constexpr int kBytes = kQ3 ? 110 : 84, kQs = kQ3 ? 32 : 16;
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  float acc[T] = {};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * kBytes;
    PrefetchAhead(p, kBytes);
    __m256i sc16, mn16 = _mm256_setzero_si256(), hm = _mm256_setzero_si256();
    if constexpr (kQ3) {
      uint32_t w[4];
      quant_tables::Q3KScaleWords(p + 96, w);
      const __m128i s6 = _mm_setr_epi32(static_cast<int>(w[0]), static_cast<int>(w[1]), static_cast<int>(w[2]),
                                        static_cast<int>(w[3]));
      sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(s6), _mm256_set1_epi16(32));
      hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    } else {
      const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(s8, _mm_set1_epi8(0x0F)));
      mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0F)));
    }
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQs + 32 * h));
      for (int k = 0; k < 4; ++k) {
        // 16-bit shifts are safe: the masks drop whatever crosses a byte boundary.
        __m256i w = _mm256_and_si256(ShiftBits(q, -2 * k), m3);
        if constexpr (kQ3) w = _mm256_or_si256(w, _mm256_and_si256(ShiftBits(hm, 2 - (4 * h + k)), m4));
        const __m256i s = PartScales(sc16, h, k);
        for (int t = 0; t < T; ++t) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acts[t].q + b * 256 + 128 * h + 32 * k));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), s));
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256i sums = Sums16(acts[t].sum + b * 16);
      const float dy = acts[t].d[b];
      if constexpr (kQ3) {
        const __m256i corr = _mm256_madd_epi16(sc16, sums);  // weights were taken as q + 4
        const int32_t total = HsumI32(_mm256_sub_epi32(isum[t], _mm256_slli_epi32(corr, 2)));
        acc[t] = std::fma(_cvtsh_ss(LoadU16(p + 108)) * dy, static_cast<float>(total), acc[t]);
      } else {
        const int32_t msum = HsumI32(_mm256_madd_epi16(mn16, sums));
        acc[t] = std::fma(_cvtsh_ss(LoadU16(p + 80)) * dy, static_cast<float>(HsumI32(isum[t])), acc[t]);
        acc[t] = std::fma(-(_cvtsh_ss(LoadU16(p + 82)) * dy), static_cast<float>(msum), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) out[t * stride] = acc[t];
}

// IQ4_XS: sub-block ib (32 elements) is an IQ4_NL block's indexes at qs[16ib..], scaled by its signed
// six-bit scale (int16 broadcast into `vpmaddwd`).
template <int T>
EMBER_AVX2 void DotIQ4XST(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  const __m256i table = GridTable(quant_tables::kIq4nlValues);
  float acc[T] = {};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 136;
    PrefetchAhead(p, 136);
    // The 8 scales as int16 in both 128-bit lanes; sub-block ib's is broadcast by one byte shuffle.
    const __m128i sc8 = _mm_cvtsi64_si128(static_cast<long long>(quant_tables::Iq4xsScaleBytes(p)));
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc8));
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i w = LookUp(p + 8 + 16 * ib, table);
      const __m256i s = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<int16_t>(((2 * ib + 1) << 8) | (2 * ib))));
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(SignedPairs(w, acts[t].q + b * 256 + 32 * ib), s));
      }
    }
    const float d = _cvtsh_ss(LoadU16(p));
    for (int t = 0; t < T; ++t) acc[t] = std::fma(d * acts[t].d[b], static_cast<float>(HsumI32(isum[t])), acc[t]);
  }
  for (int t = 0; t < T; ++t) out[t * stride] = acc[t];
}

template <int T> struct Iq4nl { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { GridDotT<GgmlType::IQ4_NL, T>(r, n, a, o, s); } };
template <int T> struct Mxfp4 { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { GridDotT<GgmlType::MXFP4, T>(r, n, a, o, s); } };
template <int T> struct Q2K { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotQ23KT<false, T>(r, n, a, o, s); } };
template <int T> struct Q3K { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotQ23KT<true, T>(r, n, a, o, s); } };
template <int T> struct Iq4xs { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotIQ4XST<T>(r, n, a, o, s); } };

}  // namespace

DotFn LowBitDotFn(GgmlType type) {
  switch (type) {
    case GgmlType::IQ4_NL: return Tile<Iq4nl>;
    case GgmlType::MXFP4: return Tile<Mxfp4>;
    case GgmlType::Q2_K: return Tile<Q2K>;
    case GgmlType::Q3_K: return Tile<Q3K>;
    case GgmlType::IQ4_XS: return Tile<Iq4xs>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
