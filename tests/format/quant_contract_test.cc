// quant.h's contract: F16/BF16/F32 exactness, error codes for bad element counts, unsupported types and
// non-finite input (with dst left untouched), block independence and unaligned sources.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "format/quant.h"

namespace ember {
namespace {

constexpr GgmlType kQuantizable[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,   GgmlType::Q4_0,
                                     GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q8_0,
                                     GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::Q2_K,
                                     GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

uint16_t U16At(const std::vector<uint8_t>& b, size_t i) {
  return static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
}

// Every one of the 65536 half / bfloat16 bit patterns decodes and re-encodes to itself (NaNs stay NaN).
TEST(QuantPlain, F16AndBF16EveryPatternRoundTrips) {
  for (GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
    std::vector<uint8_t> bits(2 * 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      bits[2 * h] = static_cast<uint8_t>(h & 0xFF);
      bits[2 * h + 1] = static_cast<uint8_t>(h >> 8);
    }
    std::vector<float> f(65536);
    ASSERT_TRUE(Dequantize(t, bits.data(), f.data(), f.size()).ok());
    std::vector<uint8_t> back(bits.size());
    ASSERT_TRUE(Quantize(t, f.data(), back.data(), f.size()).ok());
    for (uint32_t h = 0; h < 65536; ++h) {
      if (std::isnan(f[h])) {
        std::vector<float> one(1);
        ASSERT_TRUE(Dequantize(t, &back[2 * h], one.data(), 1).ok());
        ASSERT_TRUE(std::isnan(one[0])) << GgmlTypeName(t) << " " << h;
      } else {
        ASSERT_EQ(U16At(back, h), h) << GgmlTypeName(t);
      }
    }
  }
}

// Rounding on the way in is to nearest, ties to even.
TEST(QuantPlain, F16AndBF16RoundToNearestEven) {
  const float in[] = {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 65520.0f, -0.0f,
                      1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)};
  std::vector<uint8_t> h(sizeof(in)), b(sizeof(in));
  ASSERT_TRUE(Quantize(GgmlType::F16, in, h.data(), 6).ok());
  ASSERT_TRUE(Quantize(GgmlType::BF16, in, b.data(), 6).ok());
  EXPECT_EQ(U16At(h, 0), 0x3C00);  // 1 + half an ulp: tie, even is 1.0
  EXPECT_EQ(U16At(h, 1), 0x3C02);  // 1 + 1.5 ulp: tie, even is 1 + 2 ulp
  EXPECT_EQ(U16At(h, 2), 0x7C00);  // rounds past 65504: inf
  EXPECT_EQ(U16At(h, 3), 0x8000);
  EXPECT_EQ(U16At(b, 4), 0x3F80);  // bf16 ulp at 1 is 2^-7
  EXPECT_EQ(U16At(b, 5), 0x3F82);
}

TEST(QuantPlain, F32IsBitExactIncludingNaNPayloads) {
  uint32_t nan_bits = 0x7FC01234u;
  float nan_payload;
  std::memcpy(&nan_payload, &nan_bits, 4);
  const float in[4] = {1.5f, -std::numeric_limits<float>::infinity(), nan_payload, -0.0f};
  float stored[4], out[4];
  ASSERT_TRUE(Quantize(GgmlType::F32, in, stored, 4).ok());
  ASSERT_TRUE(Dequantize(GgmlType::F32, stored, out, 4).ok());
  EXPECT_EQ(std::memcmp(in, out, sizeof(in)), 0);
}

TEST(QuantErrors, ElementCountNotWholeBlocksIsInvalidArgument) {
  std::vector<uint8_t> bytes(1024);
  std::vector<float> f(300, 0.0f);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0}) {
    EXPECT_EQ(Dequantize(t, bytes.data(), f.data(), 33).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
    EXPECT_EQ(Quantize(t, f.data(), bytes.data(), 31).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
  }
  for (GgmlType t : {GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    EXPECT_EQ(Dequantize(t, bytes.data(), f.data(), 33).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
    EXPECT_EQ(Quantize(t, f.data(), bytes.data(), 31).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
  }
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS}) {
    EXPECT_EQ(Dequantize(t, bytes.data(), f.data(), 32).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
    EXPECT_EQ(Quantize(t, f.data(), bytes.data(), 255).code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
  }
  // Zero elements is whole blocks: nothing to do, no error.
  for (GgmlType t : kQuantizable) {
    EXPECT_TRUE(Dequantize(t, bytes.data(), f.data(), 0).ok()) << GgmlTypeName(t);
    EXPECT_TRUE(Quantize(t, f.data(), bytes.data(), 0).ok()) << GgmlTypeName(t);
  }
}

TEST(QuantErrors, UnsupportedTypesAreUnimplemented) {
  std::vector<uint8_t> bytes(4096);
  std::vector<float> f(256, 0.0f);
  const GgmlType unsupported[] = {GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::I8, GgmlType::I32, GgmlType::F64,
                                  static_cast<GgmlType>(16),   // iq2_xxs: a ggml type ember does not know
                                  static_cast<GgmlType>(99)};  // not a ggml type at all
  for (GgmlType t : unsupported) {
    const Status d = Dequantize(t, bytes.data(), f.data(), 256);
    EXPECT_EQ(d.code(), StatusCode::kUnimplemented) << d.ToString();
    EXPECT_EQ(Quantize(t, f.data(), bytes.data(), 256).code(), StatusCode::kUnimplemented);
    EXPECT_FALSE(CanQuantize(t));
  }
  for (GgmlType t : kQuantizable) EXPECT_TRUE(CanQuantize(t)) << GgmlTypeName(t);
}

TEST(QuantErrors, NonFiniteInputToBlockTypesIsRejectedAndDstUntouched) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (GgmlType t : kQuantizable) {
      const bool is_block = t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16;
      std::vector<float> x(512, 0.5f);
      x[300] = bad;
      std::vector<uint8_t> dst(RowBytes(t, x.size()), 0xAB);
      const Status st = Quantize(t, x.data(), dst.data(), x.size());
      if (!is_block) {
        EXPECT_TRUE(st.ok()) << GgmlTypeName(t);  // plain float types store inf/NaN as is
        continue;
      }
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << GgmlTypeName(t);
      EXPECT_NE(st.message().find("300"), std::string::npos) << st.message();
      for (uint8_t byte : dst) ASSERT_EQ(byte, 0xAB) << GgmlTypeName(t);
    }
  }
}

// Blocks are independent: quantizing a row equals quantizing each block on its own, and a source at
// an odd address dequantizes like an aligned one.
TEST(QuantLayout, BlocksIndependentAndSourcesNeedNoAlignment) {
  std::mt19937 rng(21);
  std::normal_distribution<float> g;
  std::vector<float> x(1024);
  for (float& v : x) v = g(rng) * static_cast<float>(1 + (&v - x.data()) / 256);
  for (GgmlType t : kQuantizable) {
    const uint32_t be = TypeInfo(t).block_elems, bb = TypeInfo(t).block_bytes;
    std::vector<uint8_t> whole(RowBytes(t, x.size()));
    ASSERT_TRUE(Quantize(t, x.data(), whole.data(), x.size()).ok());
    std::vector<uint8_t> one(bb);
    for (size_t b = 0; b < x.size() / be; ++b) {
      ASSERT_TRUE(Quantize(t, &x[b * be], one.data(), be).ok());
      ASSERT_EQ(std::memcmp(one.data(), &whole[b * bb], bb), 0) << GgmlTypeName(t) << " block " << b;
    }
    std::vector<uint8_t> shifted(whole.size() + 1);
    std::memcpy(shifted.data() + 1, whole.data(), whole.size());
    std::vector<float> a(x.size()), u(x.size());
    ASSERT_TRUE(Dequantize(t, whole.data(), a.data(), x.size()).ok());
    ASSERT_TRUE(Dequantize(t, shifted.data() + 1, u.data(), x.size()).ok());
    EXPECT_EQ(std::memcmp(a.data(), u.data(), a.size() * sizeof(float)), 0) << GgmlTypeName(t);
  }
}

}  // namespace
}  // namespace ember
