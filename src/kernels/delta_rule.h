// The gated delta rule's state update, one head at a time (model/delta_net.cc; docs/hybrid.md). For each
// token in order, each row j of the head's S x S state M (row-major, row j = value dim j) does
//
//   m = m * decay                              (one multiply per element)
//   d = (v[j] - Dot(m, k)) * beta
//   m = fma(d, k, m)                           (element-wise)
//   out[j] = Dot(m, q) * scale
//
// where Dot(a, b) puts element x into lane x % 16 of 16 f32 accumulators that start at +0, each updated
// acc = fma(a[x], b[x], acc) in index order, and then reduces them pairwise: lane l += lane l + 8 (l < 8),
// then l += l + 4, l += l + 2, l += l + 1 (the AVX-512 halving tree; AVX2's two 8-lane vectors added, then
// Hsum8 of dot_kernels.h). The scalar, AVX2 and AVX-512 tiers run exactly this sequence per element, so
// they agree bitwise for every S >= 1 (S % 16 != 0: the SIMD tiers finish each row's tail with the
// scalar code), and a row's result depends only on its own inputs: never on how many tokens one call
// covers, nor on the order in which rows are visited (the SIMD tiers sweep a block of rows through all
// of a call's tokens while the block stays in L1). Tier: the highest of AVX-512, AVX2, scalar that the
// CPU runs and that KernelCeiling() (EMBER_KERNELS) allows, chosen once.
#pragma once

#include <cstdint>

#include "kernels/dot_kernels.h"

namespace ember::kernels {

// n consecutive tokens of one head. Token t reads q + t * in_stride, k + t * in_stride and
// v + t * in_stride (S floats each), decay[t * gate_stride] and beta[t * gate_stride], and writes
// out + t * out_stride (S floats). `out` must not overlap M or any input.
struct DeltaRuleSteps {
  const float* q;
  const float* k;
  const float* v;
  int64_t in_stride;
  const float* decay;
  const float* beta;
  int64_t gate_stride;
  float* out;
  int64_t out_stride;
  int64_t n;
};

// Advances the head's state M [S][S] past steps.n tokens, writing each token's output.
void DeltaRuleHeadTokens(float* M, int64_t S, const DeltaRuleSteps& steps, float scale);

// One token: DeltaRuleHeadTokens with n = 1.
void DeltaRuleHead(float* M, int64_t S, const float* q, const float* k, const float* v, float decay, float beta,
                   float scale, float* out);

// One tier's implementation (tests compare them): nullptr when this CPU lacks the tier's features.
using DeltaRuleFn = void (*)(float* M, int64_t S, const DeltaRuleSteps& steps, float scale);
DeltaRuleFn DeltaRuleFnFor(KernelTier tier);
// The tier DeltaRuleHeadTokens runs.
KernelTier DeltaRuleTier();

}  // namespace ember::kernels
