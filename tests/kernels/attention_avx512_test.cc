// The AVX-512 attention kernels (src/kernels/attention_avx512.inc) against the scalar sequences they
// replace, bitwise. The .inc is compiled a second time here with SIMDe standing in for the AVX-512
// intrinsics, so its exact logic runs on CPUs without AVX-512; the native build is checked too where
// the CPU has the features (and the switch must be off where it does not).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/attention_avx512.h"
#include "kernels/attention_head.h"
#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/exp8_avx2.h"
#include "kernels/fast_exp.h"
#include "kernels/kernel_test_util.h"
#include "kernels/ops_internal.h"

// After <immintrin.h> (via avx2_util.h): SIMDe keeps the native types and AVX2 intrinsics, and
// aliases the _mm512_* names this CPU lacks to its portable implementations.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#define EMBER_AVX512
namespace ember::kernels::avx512_attn_emulated {
#include "kernels/attention_avx512.inc"
}  // namespace ember::kernels::avx512_attn_emulated

namespace ember::kernels {
namespace {

using testing::RandomFloats;

// One build of the kernels: the SIMDe one always, the native one where the CPU runs it.
struct Build {
  std::string name;
  decltype(&avx512_attn::Scores2) scores2;
  decltype(&avx512_attn::AccumN) accum;
  decltype(&avx512_attn::MaxZ) max;
  decltype(&avx512_attn::ExpSumZ) exp_sum;
};

std::vector<Build> Builds() {
  std::vector<Build> b = {{"emulated", avx512_attn_emulated::Scores2, avx512_attn_emulated::AccumN,
                           avx512_attn_emulated::MaxZ, avx512_attn_emulated::ExpSumZ}};
  if (CpuHasAvx512()) {
    b.push_back({"native", avx512_attn::Scores2, avx512_attn::AccumN, avx512_attn::MaxZ, avx512_attn::ExpSumZ});
  }
  return b;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(AttentionAvx512Test, SwitchOnlyWhereTheCpuRunsIt) {
  if (!CpuHasAvx512()) {
    EXPECT_FALSE(AttnAvx512Active());
  }
  SetAttentionAvx512Enabled(false);
  EXPECT_FALSE(AttnAvx512Active());
  SetAttentionAvx512Enabled(true);
}

// Scores2 == DotF32(k_j, q) * scale per key and query (ops_avx2.cc's Dot<> order, the scalar one in
// ops.cc), for every head size the kernel takes (compile-time 64/128 and the generic loop) and key
// counts around its 8-key groups.
TEST(AttentionAvx512Test, Scores2MatchesDotBitwise) {
  for (const Build& b : Builds()) {
    for (int hd : {32, 64, 96, 128, 160, 256, 512}) {
      for (int64_t n : {0, 1, 5, 8, 9, 16, 23, 32, 41}) {
        SCOPED_TRACE(b.name + " hd=" + std::to_string(hd) + " n=" + std::to_string(n));
        const auto k = RandomFloats(static_cast<size_t>(n * hd), static_cast<uint32_t>(hd * 131 + n));
        const auto qa = RandomFloats(static_cast<size_t>(hd), static_cast<uint32_t>(hd + 7), 2.0f);
        const auto qb = RandomFloats(static_cast<size_t>(hd), static_cast<uint32_t>(hd + 8), 0.5f);
        std::vector<float> sa(static_cast<size_t>(n) + 1, 7.0f), sb(static_cast<size_t>(n) + 1, 7.0f);
        b.scores2(k.data(), hd, n, qa.data(), qb.data(), 0.0883883f, sa.data(), sb.data());
        for (int64_t j = 0; j < n; ++j) {
          const float* kj = k.data() + j * hd;
          ASSERT_TRUE(SameBits(sa[j], scalar::DotF32(kj, qa.data(), hd) * 0.0883883f)) << "key " << j;
          ASSERT_TRUE(SameBits(sb[j], scalar::DotF32(kj, qb.data(), hd) * 0.0883883f)) << "key " << j;
        }
        EXPECT_EQ(sa[n], 7.0f);  // nothing written past n
        EXPECT_EQ(sb[n], 7.0f);
      }
    }
  }
}

// Values spanning many binades, subnormal products and cancellation: any reassociation shows.
TEST(AttentionAvx512Test, Scores2ExtremeValuesBitwise) {
  for (const Build& b : Builds()) {
    const int hd = 128;
    const int64_t n = 19;
    auto k = RandomFloats(static_cast<size_t>(n * hd), 5);
    auto q = RandomFloats(static_cast<size_t>(hd), 6);
    for (size_t i = 0; i < k.size(); ++i) k[i] *= std::ldexp(1.0f, static_cast<int>(i % 61) - 30);
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = i % 5 == 0 ? 1e-39f : q[i] * std::ldexp(1.0f, static_cast<int>(i % 17) - 8);
    }
    std::vector<float> sa(n), sb(n);
    const std::vector<float> neg = [&] {
      std::vector<float> v(q);
      for (float& f : v) f = -f;
      return v;
    }();
    b.scores2(k.data(), hd, n, q.data(), neg.data(), 1.0f, sa.data(), sb.data());
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_TRUE(SameBits(sa[j], scalar::DotF32(k.data() + j * hd, q.data(), hd))) << b.name << " key " << j;
      ASSERT_TRUE(SameBits(sb[j], scalar::DotF32(k.data() + j * hd, neg.data(), hd))) << b.name << " key " << j;
    }
  }
}

// AccumN == AxpyF32(p[q][j], v_j, out[q]) for j ascending, per query, for every group size and the
// column splits (16-column zmm passes of 8/4/2/1 and an 8-column tail).
TEST(AttentionAvx512Test, AccumNMatchesAxpyBitwise) {
  for (const Build& b : Builds()) {
    for (int hv : {8, 16, 24, 40, 64, 72, 96, 128, 136, 200, 256}) {
      for (int nq = 1; nq <= kAttnMaxGroup; ++nq) {
        for (int64_t n : {0, 1, 7, 32, 37}) {
          SCOPED_TRACE(b.name + " hv=" + std::to_string(hv) + " nq=" + std::to_string(nq) + " n=" + std::to_string(n));
          const auto v = RandomFloats(static_cast<size_t>(n * hv), static_cast<uint32_t>(hv * 17 + n));
          std::vector<std::vector<float>> p(nq), out(nq), want(nq);
          const float* pp[kAttnMaxGroup];
          float* po[kAttnMaxGroup];
          for (int q = 0; q < nq; ++q) {
            p[q] = RandomFloats(static_cast<size_t>(n), static_cast<uint32_t>(q + 100), 0.3f);
            out[q] = RandomFloats(static_cast<size_t>(hv) + 1, static_cast<uint32_t>(q + 200));
            out[q][hv] = 5.0f;  // sentinel
            want[q] = out[q];
            for (int64_t j = 0; j < n; ++j) scalar::AxpyF32(p[q][j], v.data() + j * hv, want[q].data(), hv);
            pp[q] = p[q].data();
            po[q] = out[q].data();
          }
          b.accum(pp, po, nq, v.data(), hv, n);
          for (int q = 0; q < nq; ++q) {
            ASSERT_EQ(0, std::memcmp(out[q].data(), want[q].data(), (static_cast<size_t>(hv) + 1) * sizeof(float)))
                << "query " << q;
          }
        }
      }
    }
  }
}

// MaxZ: the largest non-NaN value, -inf when there is none.
TEST(AttentionAvx512Test, MaxZIgnoresNanAndFindsMax) {
  for (const Build& b : Builds()) {
    for (int n : {0, 1, 15, 16, 17, 33, 100}) {
      auto x = RandomFloats(static_cast<size_t>(n), static_cast<uint32_t>(n + 3), 4.0f);
      float want = -std::numeric_limits<float>::infinity();
      for (int i = 0; i < n; ++i) {
        if (i % 7 == 3) x[i] = std::numeric_limits<float>::quiet_NaN();
        if (i % 11 == 5) x[i] = -std::numeric_limits<float>::infinity();
        if (!std::isnan(x[i]) && x[i] > want) want = x[i];
      }
      EXPECT_TRUE(SameBits(b.max(x.data(), n), want)) << b.name << " n=" << n;
    }
    std::vector<float> nan(20, std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(b.max(nan.data(), 20), -std::numeric_limits<float>::infinity()) << b.name;
  }
}

// One row of n through ExpSumZ against the scalar sequence. Without specials (NaN, +inf results) the
// sum's bits check the order; with them, the elements.
void CheckExpSum(const Build& b, int n, bool specials) {
  SCOPED_TRACE(b.name + " n=" + std::to_string(n) + (specials ? " with NaN/inf" : ""));
  auto x = RandomFloats(static_cast<size_t>(n), static_cast<uint32_t>(n + 11), 30.0f);
  for (int i = 0; i < n; ++i) {
    if (i % 13 == 2) x[i] = -std::numeric_limits<float>::infinity();
    if (i % 37 == 8) x[i] = -86.9f;  // subnormal-range exp: 0 by ExpF's contract
    if (!specials) continue;
    if (i % 29 == 4) x[i] = std::numeric_limits<float>::quiet_NaN();
    if (i % 31 == 6) x[i] = 95.0f;  // > kMax after subtracting max = 1: +inf
  }
  // Softmax's max (exp arguments <= 0); with specials 1, so that 95 overflows to +inf.
  float max = specials ? 1.0f : -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n && !specials; ++i) max = x[i] > max ? x[i] : max;
  std::vector<float> want(x);
  const double sum = testing::ExpSumReference(want.data(), n, max);
  std::vector<float> got(x);
  const double s = b.exp_sum(got.data(), max, n);
  if (!specials) {
    EXPECT_FALSE(std::isnan(sum) || std::isinf(sum));
  }
  EXPECT_TRUE(std::memcmp(&s, &sum, sizeof s) == 0 || (std::isnan(s) && std::isnan(sum))) << s << " vs " << sum;
  for (int j = 0; j < n; ++j) {
    ASSERT_TRUE(SameBits(got[j], want[j]) || (std::isnan(got[j]) && std::isnan(want[j]))) << j;
  }
}

// ExpSumZ: x[i] = ExpF(x[i] - max) and the sum in softmax.cc's order (groups of 8 by Hsum8 into a
// double, then the tail one by one), for lengths around the 8/16/128-element paths; inputs include
// -inf (masked), NaN, values past exp's range and subnormal-range results.
TEST(AttentionAvx512Test, ExpSumZMatchesScalarOrderBitwise) {
  for (const Build& b : Builds()) {
    for (bool specials : {false, true}) {
      for (int n : {0, 1, 7, 8, 9, 16, 24, 127, 128, 129, 136, 255, 256, 300, 1000}) CheckExpSum(b, n, specials);
    }
  }
}

// Exp16 is ExpF lane by lane over the whole input range, specials included.
TEST(AttentionAvx512Test, Exp16EqualsExpFEverywhere) {
  std::vector<float> x;
  for (float v = -100.0f; v <= 100.0f; v += 0.37f) x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 88.37f, 88.38f, -87.33f, -87.34f, 1e-30f, -1e-30f, inf, -inf,
                  std::numeric_limits<float>::quiet_NaN(), 0.6931472f, -0.3465736f, 0.3465736f}) {
    x.push_back(v);
  }
  while (x.size() % 16 != 0) x.push_back(0.5f);
  for (size_t i = 0; i < x.size(); i += 16) {
    alignas(64) float y[16];
    _mm512_store_ps(y, avx512_attn_emulated::Exp16(_mm512_loadu_ps(x.data() + i)));
    for (int l = 0; l < 16; ++l) {
      const float want = ExpF(x[i + l]);
      ASSERT_TRUE(SameBits(y[l], want) || (std::isnan(y[l]) && std::isnan(want))) << "x=" << x[i + l];
    }
  }
}

}  // namespace
}  // namespace ember::kernels
