// The scalar delta rule (the sequence of delta_rule.h written out literally, token by token, row by row)
// and the tier dispatch.
#include "kernels/delta_rule.h"

#include <algorithm>

#include "kernels/cpu_features.h"
#include "kernels/delta_rule_internal.h"

namespace ember::kernels {
namespace delta_rule {

void HeadTokensScalar(float* M, int64_t S, const DeltaRuleSteps& st, float scale) {
  for (int64_t t = 0; t < st.n; ++t) {
    const float* q = st.q + t * st.in_stride;
    const float* k = st.k + t * st.in_stride;
    const float* v = st.v + t * st.in_stride;
    const float decay = st.decay[t * st.gate_stride], beta = st.beta[t * st.gate_stride];
    float* out = st.out + t * st.out_stride;
    for (int64_t j = 0; j < S; ++j) {
      float* m = M + j * S;
      float acc[16] = {};
      DecayDot(m, k, decay, 0, S, acc);
      const float d = (v[j] - Reduce16(acc)) * beta;
      float acc2[16] = {};
      UpdateDot(m, k, q, d, 0, S, acc2);
      out[j] = Reduce16(acc2) * scale;
    }
  }
}

}  // namespace delta_rule

namespace {

KernelTier CpuTier() {
  return CpuHasAvx512() ? KernelTier::kAvx512 : CpuHasAvx2() ? KernelTier::kAvx2 : KernelTier::kScalar;
}

}  // namespace

DeltaRuleFn DeltaRuleFnFor(KernelTier tier) {
  if (tier > CpuTier()) return nullptr;
  switch (tier) {
    case KernelTier::kAvx512: return delta_rule::HeadTokensAvx512;
    case KernelTier::kAvx2: return delta_rule::HeadTokensAvx2;
    case KernelTier::kScalar: break;
  }
  return delta_rule::HeadTokensScalar;
}

KernelTier DeltaRuleTier() {
  static const KernelTier tier = std::min(CpuTier(), KernelCeiling());
  return tier;
}

void DeltaRuleHeadTokens(float* M, int64_t S, const DeltaRuleSteps& steps, float scale) {
  static const DeltaRuleFn fn = DeltaRuleFnFor(DeltaRuleTier());
  fn(M, S, steps, scale);
}

void DeltaRuleHead(float* M, int64_t S, const float* q, const float* k, const float* v, float decay, float beta,
                   float scale, float* out) {
  const DeltaRuleSteps steps{q, k, v, 0, &decay, &beta, 0, out, 0, 1};
  DeltaRuleHeadTokens(M, S, steps, scale);
}

}  // namespace ember::kernels
