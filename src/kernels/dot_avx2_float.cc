// AVX2 row-dot for F32 / F16 / BF16 weights: 32 f32 lanes (4 vectors), FMA in index order, the row
// zero-padded to a multiple of 32 — the order of dot_kernels.h, bitwise equal to dot_ref.cc.
#include <algorithm>

#include "kernels/avx2_util.h"
#include "kernels/dot_kernels.h"

namespace ember::kernels::avx2 {
namespace {

struct LoadF32 {
  EMBER_AVX2 static __m256 Load(const uint8_t* row, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
  static constexpr int kBytes = 4;
};
struct LoadF16 {
  EMBER_AVX2 static __m256 Load(const uint8_t* row, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  }
  static constexpr int kBytes = 2;
};
struct LoadBF16 {
  EMBER_AVX2 static __m256 Load(const uint8_t* row, int64_t i) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static constexpr int kBytes = 2;
};

// T <= 2 tokens per pass: 4 accumulators per token plus 4 weight vectors fit the 16 registers.
template <class L, int T>
EMBER_AVX2 void DotFloatT(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  __m256 acc[T][4];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < 4; ++k) acc[t][k] = _mm256_setzero_ps();
  const int64_t full = n / 32 * 32;
  for (int64_t c = 0; c < full; c += 32) {
    PrefetchAhead(row + c * L::kBytes, 32 * L::kBytes);
    __m256 w[4];
    for (int k = 0; k < 4; ++k) w[k] = L::Load(row, c + 8 * k);
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < 4; ++k)
        acc[t][k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(acts[t].f + c + 8 * k), acc[t][k]);
  }
  if (full < n) {
    // Tail: copy into zero-padded buffers so padding lanes see fma(0, 0, acc), as in the reference.
    alignas(32) uint8_t wb[32 * 4] = {};
    alignas(32) float xb[T][32] = {};
    std::copy(row + full * L::kBytes, row + n * L::kBytes, wb);
    for (int t = 0; t < T; ++t) std::copy(acts[t].f + full, acts[t].f + n, xb[t]);
    for (int k = 0; k < 4; ++k) {
      const __m256 w = L::Load(wb, 8 * k);
      for (int t = 0; t < T; ++t) acc[t][k] = _mm256_fmadd_ps(w, _mm256_load_ps(xb[t] + 8 * k), acc[t][k]);
    }
  }
  for (int t = 0; t < T; ++t) {
    out[t * stride] = Hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
  }
}

template <class L>
EMBER_AVX2 void DotFloat(const uint8_t* row, int64_t n, const ActRow* acts, int n_acts, float* out,
                         int64_t stride) {
  int j = 0;
  for (; j + 2 <= n_acts; j += 2) DotFloatT<L, 2>(row, n, acts + j, out + j * stride, stride);
  if (j < n_acts) DotFloatT<L, 1>(row, n, acts + j, out + j * stride, stride);
}

}  // namespace

DotFn FloatDotFn(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return DotFloat<LoadF32>;
    case GgmlType::F16: return DotFloat<LoadF16>;
    case GgmlType::BF16: return DotFloat<LoadBF16>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
