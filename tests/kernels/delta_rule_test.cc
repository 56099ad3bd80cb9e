// The delta rule (src/kernels/delta_rule.h): every tier bitwise equal to the scalar reference, whatever
// the number of tokens per call, and the reference close to the same recurrence in double. The AVX-512
// tier's .inc is compiled a second time here with SIMDe standing in for the intrinsics, so its exact
// logic runs on CPUs without AVX-512; the native build is checked too where the CPU has the features.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/delta_rule.h"
#include "kernels/delta_rule_internal.h"
#include "kernels/dot_kernels.h"
#include "kernels/kernel_test_util.h"

// After <immintrin.h> (via avx2_util.h): SIMDe keeps the native types and AVX2 intrinsics, and
// aliases the _mm512_* names this CPU lacks to its portable implementations.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#define EMBER_AVX512
namespace ember::kernels::delta_rule_avx512_emulated {
#include "kernels/delta_rule_avx512.inc"
}  // namespace ember::kernels::delta_rule_avx512_emulated

namespace ember::kernels {
namespace {

using testing::BitwiseEqual;

struct Tier {
  std::string name;
  DeltaRuleFn fn;
};

// Every implementation this CPU runs: the tiers, and the SIMDe build of the AVX-512 one.
std::vector<Tier> Tiers() {
  std::vector<Tier> t = {{"scalar", DeltaRuleFnFor(KernelTier::kScalar)},
                         {"avx512-emulated", delta_rule_avx512_emulated::HeadTokensZ}};
  if (DeltaRuleFnFor(KernelTier::kAvx2) != nullptr) t.push_back({"avx2", DeltaRuleFnFor(KernelTier::kAvx2)});
  if (DeltaRuleFnFor(KernelTier::kAvx512) != nullptr) t.push_back({"avx512", DeltaRuleFnFor(KernelTier::kAvx512)});
  return t;
}

// One head's inputs for n tokens, laid out as model/delta_net.cc has them: q, k, v of a token in one row
// of `in` (stride > 3 S), decay and beta in rows of `gates`, outputs in rows of `out`.
struct Case {
  int64_t S, n, in_stride, gate_stride = 3, out_stride;
  std::vector<float> M, in, decay, beta, out;
  float scale;

  Case(int64_t s, int64_t tokens, uint32_t seed) : S(s), n(tokens), in_stride(3 * s + 5), out_stride(s + 3) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    M = testing::RandomFloats(static_cast<size_t>(S * S), seed + 1, 0.5f);
    in = testing::RandomFloats(static_cast<size_t>(n * in_stride), seed + 2);
    for (int64_t t = 0; t < n; ++t) {  // q and k L2-normalised, as the model has them
      for (int64_t part = 0; part < 2; ++part) {
        float* x = in.data() + t * in_stride + part * S;
        double ss = 0;
        for (int64_t i = 0; i < S; ++i) ss += static_cast<double>(x[i]) * x[i];
        for (int64_t i = 0; i < S; ++i) x[i] = static_cast<float>(x[i] / std::sqrt(ss));
      }
    }
    decay.assign(static_cast<size_t>(n * gate_stride), -1.0f);
    beta.assign(static_cast<size_t>(n * gate_stride), -1.0f);
    for (int64_t t = 0; t < n; ++t) {
      decay[static_cast<size_t>(t * gate_stride)] = 0.5f + 0.5f * unit(rng);
      beta[static_cast<size_t>(t * gate_stride)] = unit(rng);
    }
    out.assign(static_cast<size_t>(n * out_stride), 7.0f);
    scale = 1.0f / std::sqrt(static_cast<float>(S));
  }

  // Tokens [t0, t0 + count) of the case.
  DeltaRuleSteps Steps(int64_t t0, int64_t count) {
    const float* row = in.data() + t0 * in_stride;
    return {row, row + S, row + 2 * S, in_stride, decay.data() + t0 * gate_stride, beta.data() + t0 * gate_stride,
            gate_stride, out.data() + t0 * out_stride, out_stride, count};
  }
};

// All tokens one call at a time.
void RunTokenByToken(DeltaRuleFn fn, Case& c) {
  for (int64_t t = 0; t < c.n; ++t) fn(c.M.data(), c.S, c.Steps(t, 1), c.scale);
}

const int64_t kSizes[] = {1, 7, 16, 33, 64, 128, 256};

TEST(DeltaRuleTest, TiersBitwiseEqualToScalarTokenByToken) {
  for (const Tier& tier : Tiers()) {
    for (int64_t S : kSizes) {
      SCOPED_TRACE(tier.name + " S=" + std::to_string(S));
      Case ref(S, 6, static_cast<uint32_t>(S * 7)), got(S, 6, static_cast<uint32_t>(S * 7));
      RunTokenByToken(DeltaRuleFnFor(KernelTier::kScalar), ref);
      // All tokens in one call, then the same again in pieces of 2, 3 and 1.
      tier.fn(got.M.data(), S, got.Steps(0, got.n), got.scale);
      EXPECT_TRUE(BitwiseEqual(got.M, ref.M));
      EXPECT_TRUE(BitwiseEqual(got.out, ref.out));
      RunTokenByToken(DeltaRuleFnFor(KernelTier::kScalar), ref);
      for (int64_t t0 : {0, 2, 5}) tier.fn(got.M.data(), S, got.Steps(t0, t0 == 0 ? 2 : t0 == 2 ? 3 : 1), got.scale);
      EXPECT_TRUE(BitwiseEqual(got.M, ref.M));
      EXPECT_TRUE(BitwiseEqual(got.out, ref.out));
    }
  }
}

// Zeros, signed zeros and tiny products (the sign of a zero lane sum must follow the same sequence), and
// large values.
TEST(DeltaRuleTest, TiersBitwiseEqualOnSpecialValues) {
  for (const Tier& tier : Tiers()) {
    for (int64_t S : kSizes) {
      SCOPED_TRACE(tier.name + " S=" + std::to_string(S));
      Case ref(S, 3, static_cast<uint32_t>(S + 99));
      std::mt19937 rng(static_cast<uint32_t>(S));
      const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-20f, -3e4f, 3e4f};
      for (float& x : ref.M) x = rng() % 3 == 0 ? specials[rng() % 7] : x;
      for (float& x : ref.in) x = rng() % 3 == 0 ? specials[rng() % 7] : x;
      Case got = ref;
      RunTokenByToken(DeltaRuleFnFor(KernelTier::kScalar), ref);
      tier.fn(got.M.data(), S, got.Steps(0, got.n), got.scale);
      EXPECT_TRUE(BitwiseEqual(got.M, ref.M));
      EXPECT_TRUE(BitwiseEqual(got.out, ref.out));
    }
  }
}

// The reference against the recurrence in double: each output and state entry within a few f32 ulps of
// the state's scale (the f32 sequence rounds ~2S times per entry and token).
TEST(DeltaRuleTest, ScalarMatchesDoublePrecision) {
  for (int64_t S : kSizes) {
    SCOPED_TRACE("S=" + std::to_string(S));
    Case c(S, 8, static_cast<uint32_t>(S * 13 + 1));
    std::vector<double> M(c.M.begin(), c.M.end()), out(c.out.size());
    for (int64_t t = 0; t < c.n; ++t) {
      const float* q = c.in.data() + t * c.in_stride;
      const float* k = q + S;
      const float* v = q + 2 * S;
      const double decay = c.decay[static_cast<size_t>(t * c.gate_stride)];
      const double beta = c.beta[static_cast<size_t>(t * c.gate_stride)];
      for (int64_t j = 0; j < S; ++j) {
        double* m = M.data() + j * S;
        double mk = 0, mq = 0;
        for (int64_t x = 0; x < S; ++x) mk += (m[x] *= decay) * k[x];
        const double d = (v[j] - mk) * beta;
        for (int64_t x = 0; x < S; ++x) mq += (m[x] += d * k[x]) * q[x];
        out[static_cast<size_t>(t * c.out_stride + j)] = mq * c.scale;
      }
    }
    RunTokenByToken(DeltaRuleFnFor(KernelTier::kScalar), c);
    double max_m = 0, err_m = 0, err_o = 0;
    for (size_t i = 0; i < M.size(); ++i) {
      max_m = std::max(max_m, std::abs(M[i]));
      err_m = std::max(err_m, std::abs(M[i] - c.M[i]));
    }
    for (int64_t t = 0; t < c.n; ++t) {
      for (int64_t j = 0; j < S; ++j) {
        const size_t i = static_cast<size_t>(t * c.out_stride + j);
        err_o = std::max(err_o, std::abs(out[i] - c.out[i]));
      }
    }
    EXPECT_LT(err_m, 1e-5 * max_m);
    EXPECT_LT(err_o, 1e-5 * max_m);
  }
}

// The dispatch: the best tier the CPU runs under EMBER_KERNELS, and DeltaRuleHead / DeltaRuleHeadTokens
// give the scalar reference's bits.
TEST(DeltaRuleTest, DispatchPicksBestTierUnderCeiling) {
  const KernelTier cpu = CpuHasAvx512() ? KernelTier::kAvx512 : CpuHasAvx2() ? KernelTier::kAvx2 : KernelTier::kScalar;
  EXPECT_EQ(DeltaRuleTier(), std::min(cpu, ParseKernelCeiling(std::getenv("EMBER_KERNELS"))));
  EXPECT_EQ(DeltaRuleFnFor(KernelTier::kAvx512) != nullptr, CpuHasAvx512());
  EXPECT_EQ(DeltaRuleFnFor(KernelTier::kAvx2) != nullptr, CpuHasAvx2());
  for (int64_t S : {33, 128}) {
    Case ref(S, 4, 5), got(S, 4, 5), one(S, 4, 5);
    RunTokenByToken(DeltaRuleFnFor(KernelTier::kScalar), ref);
    DeltaRuleHeadTokens(got.M.data(), S, got.Steps(0, got.n), got.scale);
    for (int64_t t = 0; t < one.n; ++t) {
      const DeltaRuleSteps s = one.Steps(t, 1);
      DeltaRuleHead(one.M.data(), S, s.q, s.k, s.v, *s.decay, *s.beta, one.scale, s.out);
    }
    EXPECT_TRUE(BitwiseEqual(got.M, ref.M) && BitwiseEqual(got.out, ref.out)) << S;
    EXPECT_TRUE(BitwiseEqual(one.M, ref.M) && BitwiseEqual(one.out, ref.out)) << S;
  }
}

}  // namespace
}  // namespace ember::kernels
