// The AVX2 delta rule (delta_rule.h): a 16-lane accumulator is two ymm, lanes 0-7 and 8-15, so their sum
// is the reduction's first step and avx2::Hsum (Hsum8) the rest. A block of rows is swept through all
// of the call's tokens (delta_rule::RowBlock); each row goes through memory between the two passes.
#include <algorithm>

#include "kernels/avx2_util.h"
#include "kernels/delta_rule.h"
#include "kernels/delta_rule_internal.h"

namespace ember::kernels::delta_rule {
namespace {

// One row, one token: nb full 16-element blocks, then elements [16 nb, S) in scalar.
EMBER_AVX2 inline float RowAvx2(float* m, int64_t S, const float* k, const float* q, float decay, float v,
                                float beta, float scale) {
  const int64_t nb = S / 16;
  const __m256 vdecay = _mm256_set1_ps(decay);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    float* p = m + 16 * b;
    const __m256 x0 = _mm256_mul_ps(_mm256_loadu_ps(p), vdecay);
    const __m256 x1 = _mm256_mul_ps(_mm256_loadu_ps(p + 8), vdecay);
    _mm256_storeu_ps(p, x0);
    _mm256_storeu_ps(p + 8, x1);
    lo = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k + 16 * b), lo);
    hi = _mm256_fmadd_ps(x1, _mm256_loadu_ps(k + 16 * b + 8), hi);
  }
  float dot;
  if (nb * 16 == S) {
    dot = avx2::Hsum(_mm256_add_ps(lo, hi));
  } else {
    float acc[16];
    _mm256_storeu_ps(acc, lo);
    _mm256_storeu_ps(acc + 8, hi);
    DecayDot(m, k, decay, nb * 16, S, acc);
    dot = Reduce16(acc);
  }
  const float d = (v - dot) * beta;
  const __m256 vd = _mm256_set1_ps(d);
  lo = _mm256_setzero_ps();
  hi = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    float* p = m + 16 * b;
    const __m256 x0 = _mm256_fmadd_ps(vd, _mm256_loadu_ps(k + 16 * b), _mm256_loadu_ps(p));
    const __m256 x1 = _mm256_fmadd_ps(vd, _mm256_loadu_ps(k + 16 * b + 8), _mm256_loadu_ps(p + 8));
    _mm256_storeu_ps(p, x0);
    _mm256_storeu_ps(p + 8, x1);
    lo = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q + 16 * b), lo);
    hi = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q + 16 * b + 8), hi);
  }
  if (nb * 16 == S) return avx2::Hsum(_mm256_add_ps(lo, hi)) * scale;
  float acc[16];
  _mm256_storeu_ps(acc, lo);
  _mm256_storeu_ps(acc + 8, hi);
  UpdateDot(m, k, q, d, nb * 16, S, acc);
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
      for (int64_t j = j0; j < j1; ++j) out[j] = RowAvx2(M + j * S, S, k, q, decay, v[j], beta, scale);
    }
  }
}

}  // namespace ember::kernels::delta_rule
