// The scalar pieces of the delta rule's row sequence (delta_rule.h), shared by every tier: the scalar
// tier is made of them, and the SIMD tiers finish a row whose length is not a multiple of 16 with them
// (their accumulators stored to 16 floats first). Internal to kernels/.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/delta_rule.h"

namespace ember::kernels::delta_rule {

// Rows per block in the SIMD tiers: a block (~16 KiB of state) is swept through all of a call's tokens
// while it stays in L1. Only a speed knob: rows are independent.
inline int64_t RowBlock(int64_t S) { return S >= 4096 ? 1 : 4096 / S; }

// The pairwise reduction of the 16 lanes: l += l + 8, then + 4, + 2, + 1.
inline float Reduce16(float* acc) {
  for (int w = 8; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0];
}

// Pass 1 over elements [x0, x1), x0 % 16 == 0: m *= decay, acc[x % 16] = fma(m, k, acc[x % 16]). Written
// as 16-element blocks so that the compiler can vectorise the lanes (which changes no lane's sequence).
inline void DecayDot(float* m, const float* k, float decay, int64_t x0, int64_t x1, float* acc) {
  int64_t x = x0;
  for (; x + 16 <= x1; x += 16) {
    for (int l = 0; l < 16; ++l) {
      m[x + l] *= decay;
      acc[l] = std::fma(m[x + l], k[x + l], acc[l]);
    }
  }
  for (int l = 0; x < x1; ++x, ++l) {
    m[x] *= decay;
    acc[l] = std::fma(m[x], k[x], acc[l]);
  }
}

// Pass 2 over elements [x0, x1), x0 % 16 == 0: m = fma(d, k, m), acc[x % 16] = fma(m, q, acc[x % 16]).
inline void UpdateDot(float* m, const float* k, const float* q, float d, int64_t x0, int64_t x1, float* acc) {
  int64_t x = x0;
  for (; x + 16 <= x1; x += 16) {
    for (int l = 0; l < 16; ++l) {
      m[x + l] = std::fma(d, k[x + l], m[x + l]);
      acc[l] = std::fma(m[x + l], q[x + l], acc[l]);
    }
  }
  for (int l = 0; x < x1; ++x, ++l) {
    m[x] = std::fma(d, k[x], m[x]);
    acc[l] = std::fma(m[x], q[x], acc[l]);
  }
}

// The tiers (delta_rule.cc, delta_rule_avx2.cc, delta_rule_avx512.cc).
void HeadTokensScalar(float* M, int64_t S, const DeltaRuleSteps& steps, float scale);
void HeadTokensAvx2(float* M, int64_t S, const DeltaRuleSteps& steps, float scale);
void HeadTokensAvx512(float* M, int64_t S, const DeltaRuleSteps& steps, float scale);

}  // namespace ember::kernels::delta_rule
