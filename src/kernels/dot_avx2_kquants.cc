// AVX2 row-dot for the K-quants (Q4_K, Q5_K, Q6_K) against Q8_K activations. Per super-block the
// exact integer sums are formed in SIMD and reduced to scalars; the f32 part is the scalar FMA
// sequence of dot_kernels.h, so results are bitwise those of dot_ref.cc. Each super-block is
// unpacked once per tile of up to 4 tokens.
#include <cmath>
#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/dot_kernels.h"
#include "kernels/kquant_scales.h"

namespace ember::kernels::avx2 {
namespace {

template <bool kQ5, int T>
EMBER_AVX2 void DotK45T(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  constexpr int kBytes = kQ5 ? 176 : 144;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  float acc[T] = {};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * kBytes;
    PrefetchAhead(p, kBytes);
    uint64_t scb, mnb;
    ScalesMinsK4(p + 4, &scb, &mnb);
    // Each min repeated for the two per-16 sums of its sub-block: [m0 m0 m1 m1 ... m7 m7] as int16.
    const __m128i m8 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mnb)));
    const __m256i mins = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
    const uint8_t* qs = p + (kQ5 ? 48 : 16);
    const __m256i qh = kQ5 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)) : __m256i{};
    // The 8 scales as int16 in both 128-bit lanes; sub-block j's scale is broadcast by one shuffle.
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(scb))));
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
      __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kQ5) {
        // Bits 2c and 2c+1 of qh moved to bit 4 (16-bit shifts; the mask drops cross-byte bits).
        const __m256i m10 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(ShiftBits(qh, 4 - 2 * c), m10));
        hi = _mm256_or_si256(hi, _mm256_and_si256(ShiftBits(qh, 3 - 2 * c), m10));
      }
      const __m256i s_lo = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<int16_t>(((4 * c + 1) << 8) | (4 * c))));
      const __m256i s_hi = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<int16_t>(((4 * c + 3) << 8) | (4 * c + 2))));
      for (int t = 0; t < T; ++t) {
        const int8_t* x = acts[t].q + b * 256 + 64 * c;
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
        const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32));
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), s_lo));
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), s_hi));
      }
    }
    const float d = _cvtsh_ss(LoadU16(p)), dmin = _cvtsh_ss(LoadU16(p + 2));
    for (int t = 0; t < T; ++t) {
      const int32_t msum = HsumI32(_mm256_madd_epi16(mins, Sums16(acts[t].sum + b * 16)));
      const float dy = acts[t].d[b];
      acc[t] = std::fma(d * dy, static_cast<float>(HsumI32(isum[t])), acc[t]);
      acc[t] = std::fma(-(dmin * dy), static_cast<float>(msum), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t * stride] = acc[t];
}

// Q6_K: 128-element halves; element 32k + l of a half takes its low nibble from ql[l + 32(k&1)]
// (k < 2: low, else high nibble) and two high bits from qh[l] >> 2k. Weights are kept unsigned
// (q + 32) and the offset removed with the activation sums per 16.
template <int T>
EMBER_AVX2 void DotQ6KT(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  float acc[T] = {};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* p = row + b * 210;
    PrefetchAhead(p, 210);
    const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
      // Bits 2k, 2k+1 of qh moved to bits 4, 5 (16-bit shifts are safe: the mask drops what
      // crosses a byte boundary).
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, m30));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      // This half's 8 scales (int16) in both 128-bit lanes; part k takes scale 2k in its low lane
      // (elements 0..15) and 2k+1 in its high lane (16..31) with one byte shuffle.
      // (Two literal immediates: a computed one does not compile at -O0.)
      const __m256i sch = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xEE);
      for (int k = 0; k < 4; ++k) {
        const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * k + 3) << 8) | (4 * k + 2))),
                                              _mm_set1_epi16(static_cast<int16_t>(((4 * k + 1) << 8) | (4 * k))));
        const __m256i s = _mm256_shuffle_epi8(sch, pick);
        for (int t = 0; t < T; ++t) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acts[t].q + b * 256 + 128 * h + 32 * k));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], x), s));
        }
      }
    }
    const float d = _cvtsh_ss(LoadU16(p + 208));
    for (int t = 0; t < T; ++t) {
      // Weights were taken unsigned (q + 32): subtract 32 * sum_j sc_j * sum16_j.
      const __m256i corr = _mm256_madd_epi16(sc16, Sums16(acts[t].sum + b * 16));
      const int32_t total = HsumI32(_mm256_sub_epi32(isum[t], _mm256_slli_epi32(corr, 5)));
      acc[t] = std::fma(d * acts[t].d[b], static_cast<float>(total), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t * stride] = acc[t];
}

template <int T> struct Q4K { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotK45T<false, T>(r, n, a, o, s); } };
template <int T> struct Q5K { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotK45T<true, T>(r, n, a, o, s); } };
template <int T> struct Q6K { EMBER_AVX2 static void Run(const uint8_t* r, int64_t n, const ActRow* a, float* o, int64_t s) { DotQ6KT<T>(r, n, a, o, s); } };

}  // namespace

DotFn KQuantDotFn(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return Tile<Q4K>;
    case GgmlType::Q5_K: return Tile<Q5K>;
    case GgmlType::Q6_K: return Tile<Q6K>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
