// The AVX2 delta rule (delta_rule.h): a 16-lane accumulator is two ymm, lanes 0-7 and 8-15, so their sum
// is the reduction's first step and avx2::Hsum (Hsum8) the rest. A block of rows is swept through all
// of the call's tokens (delta_rule::RowBlock), two rows at a time; each row goes through memory (L1)
// between the two passes.
#include <algorithm>

#include "kernels/avx2_util.h"
#include "kernels/delta_rule.h"
#include "kernels/delta_rule_internal.h"

namespace ember::kernels::delta_rule {
namespace {

// kR rows (rows m + r * S), one token, S % 16 == 0: each row through memory between the passes, the
// rows' accumulator chains interleaved.
template <int kR>
EMBER_AVX2 inline void RowsAvx2(float* m, int64_t S, const float* k, const float* q, float decay, const float* v,
                                float beta, float scale, float* out) {
  const __m256 vdecay = _mm256_set1_ps(decay);
  __m256 lo[kR], hi[kR], vd[kR];
  for (int r = 0; r < kR; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t x = 0; x < S; x += 16) {
    const __m256 k0 = _mm256_loadu_ps(k + x), k1 = _mm256_loadu_ps(k + x + 8);
    for (int r = 0; r < kR; ++r) {
      float* p = m + r * S + x;
      const __m256 x0 = _mm256_mul_ps(_mm256_loadu_ps(p), vdecay);
      const __m256 x1 = _mm256_mul_ps(_mm256_loadu_ps(p + 8), vdecay);
      _mm256_storeu_ps(p, x0);
      _mm256_storeu_ps(p + 8, x1);
      lo[r] = _mm256_fmadd_ps(x0, k0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x1, k1, hi[r]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    vd[r] = _mm256_set1_ps((v[r] - avx2::Hsum(_mm256_add_ps(lo[r], hi[r]))) * beta);
    lo[r] = hi[r] = _mm256_setzero_ps();
  }
  for (int64_t x = 0; x < S; x += 16) {
    const __m256 k0 = _mm256_loadu_ps(k + x), k1 = _mm256_loadu_ps(k + x + 8);
    const __m256 q0 = _mm256_loadu_ps(q + x), q1 = _mm256_loadu_ps(q + x + 8);
    for (int r = 0; r < kR; ++r) {
      float* p = m + r * S + x;
      const __m256 x0 = _mm256_fmadd_ps(vd[r], k0, _mm256_loadu_ps(p));
      const __m256 x1 = _mm256_fmadd_ps(vd[r], k1, _mm256_loadu_ps(p + 8));
      _mm256_storeu_ps(p, x0);
      _mm256_storeu_ps(p + 8, x1);
      lo[r] = _mm256_fmadd_ps(x0, q0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x1, q1, hi[r]);
    }
  }
  for (int r = 0; r < kR; ++r) out[r] = avx2::Hsum(_mm256_add_ps(lo[r], hi[r])) * scale;
}

// One row, one token, any S: S / 16 full blocks, then elements [16 (S / 16), S) in scalar.
EMBER_AVX2 inline float RowAnyAvx2(float* m, int64_t S, const float* k, const float* q, float decay, float v,
                                   float beta, float scale) {
  const int64_t n16 = S / 16 * 16;
  const __m256 vdecay = _mm256_set1_ps(decay);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int64_t x = 0; x < n16; x += 16) {
    const __m256 x0 = _mm256_mul_ps(_mm256_loadu_ps(m + x), vdecay);
    const __m256 x1 = _mm256_mul_ps(_mm256_loadu_ps(m + x + 8), vdecay);
    _mm256_storeu_ps(m + x, x0);
    _mm256_storeu_ps(m + x + 8, x1);
    lo = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k + x), lo);
    hi = _mm256_fmadd_ps(x1, _mm256_loadu_ps(k + x + 8), hi);
  }
  float acc[16];
  _mm256_storeu_ps(acc, lo);
  _mm256_storeu_ps(acc + 8, hi);
  DecayDot(m, k, decay, n16, S, acc);
  const float d = (v - Reduce16(acc)) * beta;
  const __m256 vd = _mm256_set1_ps(d);
  lo = hi = _mm256_setzero_ps();
  for (int64_t x = 0; x < n16; x += 16) {
    const __m256 x0 = _mm256_fmadd_ps(vd, _mm256_loadu_ps(k + x), _mm256_loadu_ps(m + x));
    const __m256 x1 = _mm256_fmadd_ps(vd, _mm256_loadu_ps(k + x + 8), _mm256_loadu_ps(m + x + 8));
    _mm256_storeu_ps(m + x, x0);
    _mm256_storeu_ps(m + x + 8, x1);
    lo = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q + x), lo);
    hi = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q + x + 8), hi);
  }
  _mm256_storeu_ps(acc, lo);
  _mm256_storeu_ps(acc + 8, hi);
  UpdateDot(m, k, q, d, n16, S, acc);
  return Reduce16(acc) * scale;
}

}  // namespace

EMBER_AVX2 void HeadTokensAvx2(float* M, int64_t S, const DeltaRuleSteps& st, float scale) {
  const int64_t rb = RowBlock(S);
  for (int64_t j0 = 0; j0 < S; j0 += rb) {
    const int64_t j1 = std::min(S, j0 + rb);
    for (int64_t t = 0; t < st.n; ++t) {
      const float* q = st.q + t * st.in_stride;
      const float* k = st.k + t * st.in_stride;
      const float* v = st.v + t * st.in_stride;
      const float decay = st.decay[t * st.gate_stride], beta = st.beta[t * st.gate_stride];
      float* out = st.out + t * st.out_stride;
      if (S % 16 != 0) {
        for (int64_t j = j0; j < j1; ++j) out[j] = RowAnyAvx2(M + j * S, S, k, q, decay, v[j], beta, scale);
        continue;
      }
      int64_t j = j0;
      for (; j + 2 <= j1; j += 2) RowsAvx2<2>(M + j * S, S, k, q, decay, v + j, beta, scale, out + j);
      if (j < j1) RowsAvx2<1>(M + j * S, S, k, q, decay, v + j, beta, scale, out + j);
    }
  }
}

}  // namespace ember::kernels::delta_rule
