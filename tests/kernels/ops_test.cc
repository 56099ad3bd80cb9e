#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_head.h"
#include "kernels/kernel_test_util.h"
#include "kernels/fast_exp.h"
#include "kernels/ops_internal.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

using testing::RandomFloats;

TEST(OpsTest, RmsNormMatchesDouble) {
  const int n = 1000;
  const auto x = RandomFloats(n, 1, 3.0f), w = RandomFloats(n, 2);
  std::vector<float> y(n), y2(x);
  RmsNorm(x.data(), w.data(), 1e-6f, n, y.data());
  RmsNorm(y2.data(), w.data(), 1e-6f, n, y2.data());  // in place
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double scale = 1.0 / std::sqrt(ss / n + 1e-6);
  for (int i = 0; i < n; ++i) {
    EXPECT_NEAR(y[i], x[i] * scale * w[i], 1e-6 * (1 + std::fabs(x[i] * scale * w[i])));
    EXPECT_EQ(y[i], y2[i]);
  }
  RmsNorm(x.data(), nullptr, 1e-6f, n, y.data());
  EXPECT_NEAR(y[5], x[5] * scale, 1e-6);
}

double RefAngle(int64_t pos, int i, int n_dims, double base) {
  return static_cast<double>(pos) * std::pow(base, -2.0 * i / n_dims);
}

TEST(OpsTest, RopeNormRotatesAdjacentPairs) {
  RopeParams p;
  p.layout = RopeLayout::kNorm;
  p.head_dim = 64; p.n_dims = 64; p.freq_base = 10000.0f;
  const auto x0 = RandomFloats(2 * 64, 3);
  auto x = x0;
  Rope(p, 7, 2, x.data());
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 32; ++i) {
      const double th = RefAngle(7, i, 64, 10000.0);
      const double a = x0[h * 64 + 2 * i], b = x0[h * 64 + 2 * i + 1];
      EXPECT_NEAR(x[h * 64 + 2 * i], a * std::cos(th) - b * std::sin(th), 2e-5);
      EXPECT_NEAR(x[h * 64 + 2 * i + 1], a * std::sin(th) + b * std::cos(th), 2e-5);
    }
  }
}

TEST(OpsTest, RopeNeoxRotatesHalvesAndPartialRotaryPassesThrough) {
  RopeParams p;
  p.layout = RopeLayout::kNeox;
  p.head_dim = 16; p.n_dims = 8; p.freq_base = 1000000.0f;
  const float ff[4] = {1.0f, 2.0f, 4.0f, 8.0f};
  p.freq_factors = ff;
  const auto x0 = RandomFloats(16, 4);
  auto x = x0;
  Rope(p, 123, 1, x.data());
  for (int i = 0; i < 4; ++i) {
    const double th = RefAngle(123, i, 8, 1000000.0) / ff[i];
    const double a = x0[i], b = x0[i + 4];
    EXPECT_NEAR(x[i], a * std::cos(th) - b * std::sin(th), 1e-4);
    EXPECT_NEAR(x[i + 4], a * std::sin(th) + b * std::cos(th), 1e-4);
  }
  for (int i = 8; i < 16; ++i) EXPECT_EQ(x[i], x0[i]);
}

// ggml builds angles by repeated f32 multiplication theta *= base^(-2/n_dims); powf per pair would
// differ in the last bits, which shows in logits at long positions.
TEST(OpsTest, RopeCacheUsesRepeatedMultiplication) {
  RopeParams p;
  p.head_dim = 128; p.n_dims = 128; p.freq_base = 500000.0f;
  std::vector<float> cache(128);
  RopeCache(p, 3000, cache.data());
  const float scale = std::pow(500000.0f, -2.0f / 128.0f);
  float theta = 3000.0f;
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(cache[2 * i], std::cos(theta)) << i;
    EXPECT_EQ(cache[2 * i + 1], std::sin(theta)) << i;
    theta *= scale;
  }
}

TEST(OpsTest, SoftmaxMatchesDouble) {
  auto x = RandomFloats(300, 5, 4.0f);
  x[7] = -std::numeric_limits<float>::infinity();
  const auto x0 = x;
  Softmax(x.data(), 300);
  double mx = -1e300, sum = 0;
  for (int i = 0; i < 300; ++i) if (i != 7) mx = std::max(mx, static_cast<double>(x0[i]));
  for (int i = 0; i < 300; ++i) if (i != 7) sum += std::exp(x0[i] - mx);
  double total = 0;
  for (int i = 0; i < 300; ++i) {
    const double want = i == 7 ? 0.0 : std::exp(x0[i] - mx) / sum;
    EXPECT_NEAR(x[i], want, 1e-6 * want + 1e-9);
    total += x[i];
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(OpsTest, SiluMulMatchesDouble) {
  const auto g = RandomFloats(200, 6, 5.0f), u = RandomFloats(200, 7);
  std::vector<float> out(200);
  SiluMul(g.data(), u.data(), out.data(), 200);
  for (int i = 0; i < 200; ++i) {
    const double want = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
    EXPECT_NEAR(out[i], want, 1e-6 * (1 + std::fabs(want)));
  }
}

TEST(OpsTest, ElementwiseOps) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  Add(a.data(), b.data(), out.data(), 3);
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33}));
  AddBias(a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
  Scale(a.data(), 0.5f, 3);
  EXPECT_EQ(a, (std::vector<float>{5.5f, 11, 16.5f}));
}

TEST(OpsTest, AttentionDotsMatchDouble) {
  for (int n : {1, 31, 64, 100}) {
    const auto a = RandomFloats(n, 8 + n), b = RandomFloats(n, 9 + n);
    std::vector<uint16_t> a16(n), b16(n);
    RoundToF16(a.data(), a16.data(), n);
    RoundToF16(b.data(), b16.data(), n);
    double d16 = 0, dmix = 0, d32 = 0, mag = 0;
    for (int i = 0; i < n; ++i) {
      d16 += static_cast<double>(Fp16ToF32(a16[i])) * Fp16ToF32(b16[i]);
      dmix += static_cast<double>(Fp16ToF32(a16[i])) * b[i];
      d32 += static_cast<double>(a[i]) * b[i];
      mag += std::fabs(a[i] * b[i]);
    }
    EXPECT_NEAR(DotF16F16(a16.data(), b16.data(), n), d16, 1e-6 * mag);
    EXPECT_NEAR(DotF16(a16.data(), b.data(), n), dmix, 1e-6 * mag);
    EXPECT_NEAR(DotF32(a.data(), b.data(), n), d32, 1e-6 * mag);
    std::vector<float> o1(n, 1.0f), o2(n, 1.0f);
    AxpyF16(0.5f, a16.data(), o1.data(), n);
    AxpyF32(0.5f, a.data(), o2.data(), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(o1[i], 1.0f + 0.5f * Fp16ToF32(a16[i]));
      EXPECT_NEAR(o2[i], 1.0 + 0.5 * a[i], 1e-6);
    }
  }
}

}  // namespace
}  // namespace ember::kernels

namespace ember::kernels {
namespace {

TEST(OpsTest, Avx2AttentionPrimitivesMatchScalarBitwise) {
  ASSERT_TRUE(CpuHasAvx2()) << "this suite expects an AVX2+FMA+F16C machine";
  for (int n : {1, 7, 8, 31, 32, 33, 64, 100, 128, 257}) {
    auto a = testing::RandomFloats(n, 20 + n, 3.0f), b = testing::RandomFloats(n, 40 + n);
    a[0] = 1e-6f;  // an fp16 subnormal
    std::vector<uint16_t> a16(n), b16(n), s16(n);
    avx2::RoundToF16(a.data(), a16.data(), n);
    scalar::RoundToF16(a.data(), s16.data(), n);
    EXPECT_EQ(a16, s16) << n;
    scalar::RoundToF16(b.data(), b16.data(), n);
    auto same = [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; };
    EXPECT_TRUE(same(avx2::DotF16F16(a16.data(), b16.data(), n), scalar::DotF16F16(a16.data(), b16.data(), n))) << n;
    EXPECT_TRUE(same(avx2::DotF16(a16.data(), b.data(), n), scalar::DotF16(a16.data(), b.data(), n))) << n;
    EXPECT_TRUE(same(avx2::DotF32(a.data(), b.data(), n), scalar::DotF32(a.data(), b.data(), n))) << n;
    std::vector<float> o1(b), o2(b);
    avx2::AxpyF16(0.37f, a16.data(), o1.data(), n);
    scalar::AxpyF16(0.37f, a16.data(), o2.data(), n);
    EXPECT_EQ(0, std::memcmp(o1.data(), o2.data(), n * 4)) << n;
    avx2::AxpyF32(-1.3f, a.data(), o1.data(), n);
    scalar::AxpyF32(-1.3f, a.data(), o2.data(), n);
    EXPECT_EQ(0, std::memcmp(o1.data(), o2.data(), n * 4)) << n;
    std::vector<uint16_t> acc1(b16), acc2(b16);
    avx2::MadF16(0.61f, a16.data(), acc1.data(), n);
    scalar::MadF16(0.61f, a16.data(), acc2.data(), n);
    EXPECT_EQ(acc1, acc2) << n;
    avx2::ScaleF16(acc1.data(), 0.3f, n);
    scalar::ScaleF16(acc2.data(), 0.3f, n);
    EXPECT_EQ(acc1, acc2) << n;
    for (int i = 0; i < n; ++i) {
      const float want = Fp16ToF32(F32ToFp16(Fp16ToF32(F32ToFp16(Fp16ToF32(b16[i]) + 0.61f * Fp16ToF32(a16[i]))) * 0.3f));
      EXPECT_NEAR(Fp16ToF32(acc1[i]), want, 2e-3 * (std::fabs(want) + 1e-3)) << i;
    }
  }
}

}  // namespace
}  // namespace ember::kernels

namespace ember::kernels {
namespace {

TEST(FastExpTest, WithinTwoUlpOfExactAndSimdEqualsScalar) {
  std::vector<float> x;
  for (float v = -87.3f; v < 88.3f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.5f, -0.34657359f, 0.34657359f}) x.push_back(v);
  std::vector<float> y(x.size());
  ExpArray(x.data(), y.data(), static_cast<int>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    const double ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    ASSERT_LE(std::fabs(y[i] - want), 2 * ulp) << x[i];
    const float s = ExpF(x[i]);
    ASSERT_EQ(0, std::memcmp(&s, &y[i], 4)) << x[i];
  }
}

TEST(FastExpTest, EdgeCases) {
  const float in[8] = {-INFINITY, INFINITY, NAN, -100.0f, 100.0f, -87.0f, 88.0f, 0.0f};
  float out[8];
  ExpArray(in, out, 8);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], INFINITY);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_EQ(out[4], INFINITY);
  EXPECT_GT(out[5], 0.0f);
  EXPECT_LT(out[6], INFINITY);
  EXPECT_EQ(out[7], 1.0f);
  for (int i = 0; i < 8; ++i) {
    const float s = ExpF(in[i]);
    EXPECT_TRUE(std::memcmp(&s, &out[i], 4) == 0 || (std::isnan(s) && std::isnan(out[i]))) << i;
  }
}

// A row's softmax / SiLU must not depend on its length's split into 8-wide chunks.
TEST(OpsTest, SoftmaxAndSiluArePositionIndependent) {
  const auto x = testing::RandomFloats(19, 77, 3.0f), u = testing::RandomFloats(19, 78);
  std::vector<float> a(x.begin() + 3, x.end()), b(x);  // the same 16 values at offsets 0 and 3
  std::vector<float> oa(16), ob(19);
  SiluMul(a.data(), u.data(), oa.data(), 16);
  std::vector<float> u2(19);
  std::copy(u.begin(), u.begin() + 16, u2.begin() + 3);
  SiluMul(b.data(), u2.data(), ob.data(), 19);
  EXPECT_EQ(0, std::memcmp(oa.data(), ob.data() + 3, 16 * 4));
}

// The documented summation order (softmax.cc): groups of 8 reduced in f32 by the Hsum tree, each
// group's sum and then each tail element added to a double. Checked bitwise for lengths around the
// group size and for a long row, with NaN-free masked entries, so a changed order fails here.
TEST(OpsTest, SoftmaxSumsInGgmlOrder) {
  for (bool zmm : {true, false})  // the AVX-512 and AVX2 paths (attention_avx512.h) where the CPU has them
  for (int n : {1, 7, 8, 9, 15, 16, 17, 63, 127, 128, 129, 137, 300, 1000}) {
    SetAttentionAvx512Enabled(zmm);
    auto x = RandomFloats(static_cast<size_t>(n), 90 + n, 6.0f);
    if (n > 3) x[2] = -INFINITY;
    std::vector<float> want(x);
    float mx = -INFINITY;
    for (float v : want) mx = v > mx ? v : mx;
    const double sum = testing::ExpSumReference(want.data(), n, mx);
    const float inv = static_cast<float>(1.0 / sum);
    for (float& v : want) v *= inv;
    std::vector<float> w16(x);
    Softmax(x.data(), n);
    EXPECT_EQ(0, std::memcmp(x.data(), want.data(), static_cast<size_t>(n) * 4)) << "n=" << n;
    // SoftmaxToF16Weights = Softmax, then each probability rounded to fp16 and widened back.
    SoftmaxToF16Weights(w16.data(), n);
    for (int j = 0; j < n; ++j) {
      const float r = Fp16ToF32(F32ToFp16(want[j]));
      ASSERT_EQ(0, std::memcmp(&w16[j], &r, 4)) << "n=" << n << " j=" << j;
    }
  }
  SetAttentionAvx512Enabled(true);
}

TEST(OpsTest, SoftmaxAllMasked) {
  for (int n : {5, 40, 200}) {
    std::vector<float> x(n, -INFINITY), y(x);
    Softmax(x.data(), n);
    SoftmaxToF16Weights(y.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(x[i], 0.0f);
    for (int i = 0; i < n; ++i) EXPECT_EQ(y[i], 0.0f);
  }
}

}  // namespace
}  // namespace ember::kernels
