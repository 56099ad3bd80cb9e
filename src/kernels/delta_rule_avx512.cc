// The native build of the AVX-512 delta rule (delta_rule_avx512.inc; AVX-512 enabled per function
// through EMBER_AVX512).
#include <algorithm>

#include "kernels/avx512_util.h"
#include "kernels/delta_rule.h"
#include "kernels/delta_rule_internal.h"

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own "don't care" operands once
// inlined (GCC PR 105593; see dot_avx512.cc).
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace ember::kernels::delta_rule_avx512 {
#include "kernels/delta_rule_avx512.inc"
}  // namespace ember::kernels::delta_rule_avx512
#pragma GCC diagnostic pop

namespace ember::kernels::delta_rule {

void HeadTokensAvx512(float* M, int64_t S, const DeltaRuleSteps& steps, float scale) {
  delta_rule_avx512::HeadTokensZ(M, S, steps, scale);
}

}  // namespace ember::kernels::delta_rule
