// GeluMul (ggml's fp16-table GELU times up) and TanhSoftCap.
#include "kernels/gelu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "util/half.h"

namespace ember::kernels {
namespace {

TEST(GeluTest, MatchesTheFp16TableDefinition) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-12.0f, 12.0f);
  std::vector<float> g(4096), u(4096), out(4096);
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = d(rng);
    u[i] = d(rng) / 4;
  }
  g[0] = -10.0f;
  g[1] = 10.0f;
  g[2] = 0.0f;
  GeluMul(g.data(), u.data(), out.data(), static_cast<int>(g.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    float want;
    if (g[i] <= -10.0f) {
      want = 0.0f;
    } else if (g[i] >= 10.0f) {
      want = g[i] * u[i];
    } else {
      want = Fp16ToF32(F32ToFp16(GeluTanhF32(Fp16ToF32(F32ToFp16(g[i]))))) * u[i];
    }
    ASSERT_EQ(out[i], want) << g[i];
    // And close to the exact erf-free tanh GELU in double (fp16 table: ~1e-3 relative).
    const double x = g[i];
    const double exact = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * x * (1 + 0.044715 * x * x))) * u[i];
    EXPECT_NEAR(out[i], exact, 2e-3 * std::abs(x * u[i]) + 1e-6) << g[i];
  }
  // In place.
  std::vector<float> g2 = g;
  GeluMul(g2.data(), u.data(), g2.data(), static_cast<int>(g2.size()));
  EXPECT_EQ(g2, out);
}

TEST(GeluTest, TanhSoftCapBoundsAndKeepsSmallValues) {
  std::vector<float> x = {-1000.0f, -1.0f, 0.0f, 0.5f, 29.0f, 1e6f};
  TanhSoftCap(x.data(), 30.0f, static_cast<int>(x.size()));
  EXPECT_NEAR(x[0], -30.0f, 1e-4);
  EXPECT_NEAR(x[1], -30.0f * std::tanh(1.0f / 30.0f), 1e-6);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_NEAR(x[3], 0.5f, 1e-3);
  EXPECT_LT(x[4], 29.0f);
  EXPECT_LE(x[5], 30.0f);
}

}  // namespace
}  // namespace ember::kernels
