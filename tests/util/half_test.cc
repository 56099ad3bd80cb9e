#include "util/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ember {
namespace {

TEST(Half, KnownValues) {
  EXPECT_EQ(F32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(F32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToFp16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToFp16(-2.0f), 0xc000);
  EXPECT_EQ(F32ToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToFp16(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(F32ToFp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(F32ToFp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToFp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToFp16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_TRUE(std::isnan(Fp16ToF32(F32ToFp16(std::nanf("")))));
  EXPECT_EQ(Fp16ToF32(0x3555), 0.333251953125f);
}

TEST(Half, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Fp16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToFp16(f), h) << std::hex << h;
  }
}

TEST(Half, RoundsToNearestEven) {
  // Midway between 1.0 (0x3c00) and the next half (0x3c01): ties go to the even mantissa.
  const float mid = (Fp16ToF32(0x3c00) + Fp16ToF32(0x3c01)) / 2;
  EXPECT_EQ(F32ToFp16(mid), 0x3c00);
  const float mid2 = (Fp16ToF32(0x3c01) + Fp16ToF32(0x3c02)) / 2;
  EXPECT_EQ(F32ToFp16(mid2), 0x3c02);
  // Subnormal tie: 1.5 * 2^-24 rounds to 2 * 2^-24.
  EXPECT_EQ(F32ToFp16(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(F32ToFp16(0.5f * std::ldexp(1.0f, -24) * 1.0001f), 0x0001);
}

TEST(Bf16, KnownValues) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(F32ToBf16(Bits2F(0x3f808000u)), 0x3f80);  // tie to even (down)
  EXPECT_EQ(F32ToBf16(Bits2F(0x3f818000u)), 0x3f82);  // tie to even (up)
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(std::nanf("")))));
}

}  // namespace
}  // namespace ember
