// AVX2 helpers shared by the SIMD row-dot kernels. Internal to kernels/.
//
// Every function carrying EMBER_AVX2 is compiled for AVX2+FMA+F16C through a target attribute, so the
// library also builds (and dispatches at run time) when the baseline -march lacks them.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"

#define EMBER_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace ember::kernels::avx2 {

// Software prefetch distance for weight streams. Measured on the dev machine (Zen, under load):
// 1 KiB ahead gains 15-25% in DRAM-bound matvec over none, 2 KiB a little more again.
inline constexpr int kPrefetchBytes = 2048;

// Hsum8 of dot_kernels.h: ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)).
EMBER_AVX2 inline float Hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Integer horizontal sum (exact; order irrelevant).
EMBER_AVX2 inline int32_t HsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Per-block int32 sums for 8 blocks: `a` holds blocks 0..3 as [b0 b1 b2 b3 | b0 b1 b2 b3] (lanes
// 0..3 of each block's 8-lane sum in the low half, lanes 4..7 in the high half — what two levels
// of hadd_epi32 produce) and `b` blocks 4..7 likewise. Returns lane l = total of block l.
EMBER_AVX2 inline __m256i Combine8(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// Prefetches [p, p + bytes) kPrefetchBytes ahead, one request per cache line.
inline void PrefetchAhead(const uint8_t* p, int bytes) {
  for (int off = 0; off < bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + off), _MM_HINT_T0);
  }
}

inline uint16_t LoadU16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return h; }

// The 16 per-16 activation sums of a super-block as int16 in natural order (|sum| <= 16*128: the
// K-quants and low-bit kernels).
EMBER_AVX2 inline __m256i Sums16(const int32_t* bs) {
  const __m256i packed = _mm256_packs_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bs)),
                                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bs + 8)));
  return _mm256_permute4x64_epi64(packed, 0xD8);  // packs interleaves 128-bit halves; undo it
}

// Shifts each 16-bit lane left by `by` (right by -by); `by` is a compile-time constant after unrolling.
EMBER_AVX2 inline __m256i ShiftBits(__m256i v, int by) {
  if (by > 0) return _mm256_slli_epi16(v, by);
  if (by < 0) return _mm256_srli_epi16(v, -by);
  return v;
}

// A row kernel K<T> (T = 1..4 activation rows at once) as a DotFn: the tile size picked at run time.
template <template <int> class K>
EMBER_AVX2 void Tile(const uint8_t* row, int64_t n, const ActRow* acts, int n_acts, float* out, int64_t stride) {
  switch (n_acts) {
    case 4: K<4>::Run(row, n, acts, out, stride); return;
    case 3: K<3>::Run(row, n, acts, out, stride); return;
    case 2: K<2>::Run(row, n, acts, out, stride); return;
    default: K<1>::Run(row, n, acts, out, stride); return;
  }
}

}  // namespace ember::kernels::avx2
