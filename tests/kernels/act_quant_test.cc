#include "kernels/act_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
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

// Every element of many random blocks (magnitudes 1e-3..1e3, every position of the block's max,
// ties at x*id = k + 0.5 made by construction) against the scalar definition: q = nearbyint(x *
// 127/amax), d = fp16(amax/127), sum = Σq. Catches a SIMD path whose lane order or rounding differs.
TEST(ActQuantTest, Q8_0MatchesScalarDefinitionOnRandomBlocks) {
  const int n_blocks = 64;
  std::vector<float> x(32 * n_blocks);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int b = 0; b < n_blocks; ++b) {
    const float mag = std::pow(10.0f, static_cast<float>(b % 7) - 3.0f);
    for (int j = 0; j < 32; ++j) x[b * 32 + j] = u(rng) * mag;
    if (b % 5 == 0) {  // amax = 127 exactly, so x*id = x: halves are ties
      x[b * 32 + (b % 32)] = -127.0f;
      x[b * 32 + (b + 1) % 32] = 2.5f;
      x[b * 32 + (b + 2) % 32] = -0.5f;
    }
  }
  ActBatch a;
  a.Convert(DotType::kQ8_0, x.data(), 2, 32 * n_blocks / 2);
  for (int b = 0; b < n_blocks; ++b) {
    const ActRow r = a.Row(b / (n_blocks / 2));
    const int rb = b % (n_blocks / 2);
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[b * 32 + j] * id));
      ASSERT_EQ(r.q[rb * 32 + j], q) << "block " << b << " elem " << j;
      sum += q;
    }
    EXPECT_EQ(r.sum[rb], sum) << b;
    EXPECT_EQ(r.d[rb], Fp16ToF32(F32ToFp16(amax / 127.0f))) << b;
  }
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

// Q8_K over many random blocks (magnitudes 1e-4..1e4, the maximum at every position, magnitude ties of
// opposite sign where the first must win, exact halves x * iscale = k + 0.5, a zero block) against
// the scalar definition (ggml's quantize_row_q8_K_ref): catches a SIMD path that picks another max,
// rounds differently or narrows with saturation.
TEST(ActQuantTest, Q8_KMatchesScalarDefinitionOnRandomBlocks) {
  const int n_blocks = 48;
  std::vector<float> x(256 * n_blocks);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int b = 0; b < n_blocks; ++b) {
    float* blk = x.data() + b * 256;
    const float mag = std::pow(10.0f, static_cast<float>(b % 9) - 4.0f);
    for (int j = 0; j < 256; ++j) blk[j] = u(rng) * mag;
    const int at = (b * 37) % 256;
    if (b % 4 == 1) {  // a magnitude tie: -m first, +m later (or the reverse): the first one's sign wins
      const int other = (at + 101) % 256;
      blk[std::min(at, other)] = (b % 8 == 1 ? -2.0f : 2.0f) * mag;
      blk[std::max(at, other)] = (b % 8 == 1 ? 2.0f : -2.0f) * mag;
    }
    if (b % 4 == 2) {  // max = -127 -> iscale = 1: x itself is rounded, halves are ties
      blk[at] = -127.0f;
      for (int j = 0; j < 16; ++j) blk[(at + 1 + j) % 256] = static_cast<float>(j) - 7.5f;
    }
    if (b == n_blocks - 1) std::fill(blk, blk + 256, 0.0f);
  }
  ActBatch a;
  a.Convert(DotType::kQ8_K, x.data(), 3, 256 * n_blocks / 3);
  const int per_row = n_blocks / 3;
  for (int b = 0; b < n_blocks; ++b) {
    const ActRow r = a.Row(b / per_row);
    const int rb = b % per_row;
    const float* blk = x.data() + b * 256;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(blk[j]) > amax) {
        amax = std::fabs(blk[j]);
        max = blk[j];
      }
    }
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
    EXPECT_EQ(r.d[rb], amax != 0.0f ? 1.0f / iscale : 0.0f) << b;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 16 * g; j < 16 * g + 16; ++j) {
        const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * blk[j])));
        ASSERT_EQ(r.q[rb * 256 + j], q) << "block " << b << " elem " << j;
        sum += q;
      }
      ASSERT_EQ(r.sum[rb * 16 + g], sum) << "block " << b << " group " << g;
    }
  }
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
