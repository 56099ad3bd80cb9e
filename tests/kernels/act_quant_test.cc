#include "kernels/act_quant.h"

#include <gtest/gtest.h>

#include <vector>

#include "util/half.h"

namespace ember::kernels {
namespace {

// ggml's x86 Q8_0 activation quantizer rounds x * 127/amax half-to-even (_mm256_round_ps), not
// roundf: with amax = 127 the multiplier is 1 and 2.5 -> 2, -3.5 -> -4, 0.5 -> 0.
TEST(ActQuantTest, Q8_0RoundsHalfToEvenWithMultiplier) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f; x[1] = 2.5f; x[2] = -3.5f; x[3] = 0.5f; x[4] = 1.5f;
  ActBatch a;
  a.Convert(DotType::kQ8_0, x.data(), 1, 32);
  const ActRow r = a.Row(0);
  EXPECT_EQ(r.q[0], 127);
  EXPECT_EQ(r.q[1], 2);
  EXPECT_EQ(r.q[2], -4);
  EXPECT_EQ(r.q[3], 0);
  EXPECT_EQ(r.q[4], 2);
  EXPECT_EQ(r.d[0], 1.0f);
  EXPECT_EQ(r.sum[0], 127 + 2 - 4 + 0 + 2);
}

TEST(ActQuantTest, Q8_1StoresFp16RoundedSum) {
  std::vector<float> x(32, 0.3f);
  x[7] = -1.7f;
  ActBatch a;
  a.Convert(DotType::kQ8_1, x.data(), 1, 32);
  const ActRow r = a.Row(0);
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += r.q[j];
  EXPECT_EQ(r.sum[0], sum);
  const float d = 1.7f / 127.0f;
  EXPECT_EQ(r.s[0], Fp16ToF32(F32ToFp16(d * static_cast<float>(sum))));
  EXPECT_EQ(r.d[0], Fp16ToF32(F32ToFp16(d)));
  EXPECT_EQ(r.q[7], -127);
}

// Q8_K: the signed value of largest magnitude maps to -127 (iscale = -127/max), d = 1/iscale is
// negative for a positive max, and per-16 sums are kept.
TEST(ActQuantTest, Q8_KSignConventionAndSums) {
  std::vector<float> x(256, 0.0f);
  x[3] = 2.0f;
  x[17] = -1.0f;
  x[200] = 2.0f;  // a tie in magnitude: the first one wins (same sign here, so same result)
  ActBatch a;
  a.Convert(DotType::kQ8_K, x.data(), 1, 256);
  const ActRow r = a.Row(0);
  EXPECT_EQ(r.q[3], -127);
  EXPECT_EQ(r.q[17], 64);  // -1 * -63.5 = 63.5 -> 64 (half to even)
  EXPECT_EQ(r.d[0], 1.0f / (-127.0f / 2.0f));
  EXPECT_EQ(r.sum[0], -127);
  EXPECT_EQ(r.sum[1], 64);
  EXPECT_EQ(r.sum[12], -127);
}

TEST(ActQuantTest, ZeroBlocks) {
  std::vector<float> x(256, 0.0f);
  ActBatch a;
  a.Convert(DotType::kQ8_K, x.data(), 1, 256);
  EXPECT_EQ(a.Row(0).d[0], 0.0f);
  a.Convert(DotType::kQ8_0, x.data(), 1, 256);
  EXPECT_EQ(a.Row(0).d[7], 0.0f);
  EXPECT_EQ(a.Row(0).q[255], 0);
}

TEST(ActQuantTest, FloatDotTypesRound) {
  const float x[2] = {1.0f + 1.0f / 4096.0f, 3.14159265f};
  ActBatch a;
  a.Convert(DotType::kF16, x, 1, 2);
  EXPECT_EQ(a.Row(0).f[0], 1.0f);  // 1 + 2^-12 is a tie below fp16 resolution: to even
  EXPECT_EQ(a.Row(0).f[1], Fp16ToF32(F32ToFp16(x[1])));
  a.Convert(DotType::kBF16, x, 1, 2);
  EXPECT_EQ(a.Row(0).f[1], Bf16ToF32(F32ToBf16(x[1])));
  a.Convert(DotType::kF32, x, 1, 2);
  EXPECT_EQ(a.Row(0).f[1], x[1]);
}

}  // namespace
}  // namespace ember::kernels
