// Known-answer tests for every dequantizer. Block bytes are built by hand from the ggml format
// definitions and the expected floats are computed here from the format formulas, independently of
// src/format/quant_*.cc. fp16 constants are written as bit patterns (sign | 5-bit exponent | 10-bit
// mantissa) so the tests do not lean on util/half.h either. Every expected value is a small integer times
// a power of two, so the comparisons are exact.
#include "format/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ember {
namespace {

constexpr uint16_t kHalfOne = 0x3C00;       // 1.0
constexpr uint16_t kHalfHalf = 0x3800;      // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;   // 0.25
constexpr uint16_t kHalfEighth = 0x3000;    // 0.125
constexpr uint16_t kHalfMinusQuarter = 0xB400;  // -0.25
constexpr uint16_t kHalfMinusHalf = 0xB800;     // -0.5
constexpr uint16_t kHalfMinus1_5 = 0xBE00;      // -1.5
constexpr uint16_t kHalfTwo = 0x4000;           // 2.0

void PutHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

std::vector<float> Deq(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -12345.0f);
  const Status st = Dequantize(type, bytes.data(), out.data(), n);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(QuantDequant, PlainFloatTypes) {
  const std::vector<uint8_t> f16 = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C, 0x00, 0x80, 0xFF, 0x7B};
  const std::vector<float> h = Deq(GgmlType::F16, f16, 6);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 1.0f / 16777216.0f);  // smallest subnormal, 2^-24
  EXPECT_EQ(h[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[4], 0.0f);
  EXPECT_TRUE(std::signbit(h[4]));
  EXPECT_EQ(h[5], 65504.0f);

  const std::vector<uint8_t> bf16 = {0x80, 0x3F, 0x49, 0x40, 0x80, 0xBF, 0x80, 0x7F};
  const std::vector<float> b = Deq(GgmlType::BF16, bf16, 4);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], 3.140625f);  // 0x4049: 1.5703125 * 2
  EXPECT_EQ(b[2], -1.0f);
  EXPECT_EQ(b[3], std::numeric_limits<float>::infinity());

  const float f32_in[3] = {1.5f, -0.0f, 1e-30f};
  std::vector<uint8_t> f32(sizeof(f32_in));
  std::memcpy(f32.data(), f32_in, sizeof(f32_in));
  const std::vector<float> f = Deq(GgmlType::F32, f32, 3);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_TRUE(std::signbit(f[1]));
  EXPECT_EQ(f[2], 1e-30f);
}

// q4_0: {f16 d; u8 qs[16]}, byte j = element j (low nibble) | element j+16 (high nibble),
// value = (nibble - 8) * d. Two blocks, to check the 18-byte stride too.
TEST(QuantDequant, Q4_0) {
  std::vector<uint8_t> blk(36);
  PutHalf(&blk[0], kHalfHalf);
  for (int j = 0; j < 16; ++j) blk[2 + j] = static_cast<uint8_t>(j | (((7 * j + 3) & 15) << 4));
  PutHalf(&blk[18], kHalfMinusQuarter);
  for (int j = 0; j < 16; ++j) blk[20 + j] = static_cast<uint8_t>((15 - j) | (j << 4));
  const std::vector<float> y = Deq(GgmlType::Q4_0, blk, 64);
  EXPECT_EQ(y[0], (0 - 8) * 0.5f);
  EXPECT_EQ(y[15], (15 - 8) * 0.5f);
  EXPECT_EQ(y[16], (0x3 - 8) * 0.5f);
  EXPECT_EQ(y[17], (0xA - 8) * 0.5f);
  EXPECT_EQ(y[32], (15 - 8) * -0.25f);
  EXPECT_EQ(y[48], (0 - 8) * -0.25f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[16 + j], (((7 * j + 3) & 15) - 8) * 0.5f) << j;
    EXPECT_EQ(y[32 + j], ((15 - j) - 8) * -0.25f) << j;
    EXPECT_EQ(y[48 + j], (j - 8) * -0.25f) << j;
  }
}

// q4_1: {f16 d; f16 m; u8 qs[16]}, value = nibble * d + m.
TEST(QuantDequant, Q4_1) {
  std::vector<uint8_t> blk(20);
  PutHalf(&blk[0], kHalfQuarter);
  PutHalf(&blk[2], kHalfMinus1_5);
  for (int j = 0; j < 16; ++j) blk[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> y = Deq(GgmlType::Q4_1, blk, 32);
  EXPECT_EQ(y[0], -1.5f);
  EXPECT_EQ(y[15], 15 * 0.25f - 1.5f);
  EXPECT_EQ(y[16], 15 * 0.25f - 1.5f);
  EXPECT_EQ(y[31], -1.5f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.5f) << j;
    EXPECT_EQ(y[16 + j], (15 - j) * 0.25f - 1.5f) << j;
  }
}

// The fifth bits used by both q5 tests: element e's bit is bit (e % 8) of byte (e / 8).
const uint8_t kQh5[4] = {0x01, 0x80, 0x55, 0xA0};
int HighBit5(int e) { return (kQh5[e / 8] >> (e % 8)) & 1; }

// q5_0: {f16 d; u8 qh[4]; u8 qs[16]}, value = ((nibble | fifth bit << 4) - 16) * d.
TEST(QuantDequant, Q5_0) {
  std::vector<uint8_t> blk(22);
  PutHalf(&blk[0], kHalfHalf);
  std::memcpy(&blk[2], kQh5, 4);
  for (int j = 0; j < 16; ++j) blk[6 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> y = Deq(GgmlType::Q5_0, blk, 32);
  EXPECT_EQ(y[0], (16 - 16) * 0.5f);   // nibble 0, high bit set (byte 0 bit 0)
  EXPECT_EQ(y[1], (1 - 16) * 0.5f);    // high bit clear
  EXPECT_EQ(y[15], (31 - 16) * 0.5f);  // byte 1 bit 7
  EXPECT_EQ(y[16], (31 - 16) * 0.5f);  // byte 2 bit 0, nibble 15
  EXPECT_EQ(y[17], (14 - 16) * 0.5f);
  EXPECT_EQ(y[29], (18 - 16) * 0.5f);  // byte 3 bit 5, nibble 2
  EXPECT_EQ(y[30], (1 - 16) * 0.5f);
  EXPECT_EQ(y[31], (16 - 16) * 0.5f);  // byte 3 bit 7, nibble 0
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], ((j | HighBit5(j) << 4) - 16) * 0.5f) << j;
    EXPECT_EQ(y[16 + j], (((15 - j) | HighBit5(16 + j) << 4) - 16) * 0.5f) << j;
  }
}

// q5_1: {f16 d; f16 m; u8 qh[4]; u8 qs[16]}, value = (nibble | fifth bit << 4) * d + m.
TEST(QuantDequant, Q5_1) {
  std::vector<uint8_t> blk(24);
  PutHalf(&blk[0], kHalfEighth);
  PutHalf(&blk[2], kHalfTwo);
  std::memcpy(&blk[4], kQh5, 4);
  for (int j = 0; j < 16; ++j) blk[8 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> y = Deq(GgmlType::Q5_1, blk, 32);
  EXPECT_EQ(y[0], 16 * 0.125f + 2.0f);
  EXPECT_EQ(y[1], 1 * 0.125f + 2.0f);
  EXPECT_EQ(y[15], 31 * 0.125f + 2.0f);
  EXPECT_EQ(y[31], 16 * 0.125f + 2.0f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j | HighBit5(j) << 4) * 0.125f + 2.0f) << j;
    EXPECT_EQ(y[16 + j], ((15 - j) | HighBit5(16 + j) << 4) * 0.125f + 2.0f) << j;
  }
}

// q8_0: {f16 d; i8 qs[32]}, value = qs[e] * d (signed bytes).
TEST(QuantDequant, Q8_0) {
  std::vector<uint8_t> blk(34);
  PutHalf(&blk[0], kHalfEighth);
  for (int e = 0; e < 32; ++e) blk[2 + e] = static_cast<uint8_t>(static_cast<int8_t>(7 * e - 100));
  blk[2] = 0x80;  // -128
  blk[3] = 0x81;  // -127
  blk[4] = 0xFF;  // -1
  blk[5] = 0x7F;  // 127
  const std::vector<float> y = Deq(GgmlType::Q8_0, blk, 32);
  EXPECT_EQ(y[0], -128 * 0.125f);
  EXPECT_EQ(y[1], -127 * 0.125f);
  EXPECT_EQ(y[2], -1 * 0.125f);
  EXPECT_EQ(y[3], 127 * 0.125f);
  for (int e = 4; e < 32; ++e) EXPECT_EQ(y[e], (7 * e - 100) * 0.125f) << e;
}

// The 6-bit scales and mins shared by the q4_K and q5_K tests, one distinct pair per sub-block, and their
// 12-byte packing worked out by hand: bytes 0-3 = sc[j] | (sc[j+4] >> 4) << 6, bytes 4-7 =
// m[j] | (m[j+4] >> 4) << 6, bytes 8-11 = (sc[j+4] & 15) | (m[j+4] & 15) << 4.
const int kSc[8] = {1, 63, 17, 32, 45, 2, 60, 33};
const int kMin[8] = {0, 5, 63, 40, 1, 62, 16, 47};
const uint8_t kPackedScales[12] = {0x81, 0x3F, 0xD1, 0xA0, 0x00, 0xC5, 0x7F, 0xA8, 0x1D, 0xE2, 0x0C, 0xF1};

// 4-bit codes for q4_K/q5_K element e: varied within and across sub-blocks.
int Nib(int e) { return (5 * e + e / 32) & 15; }

// Fills K4/K5 nibble bytes: element e sits in byte 32*(e/64) + e%32, low nibble for even sub-blocks
// (e/32 even), high nibble for odd ones.
void FillKNibbles(uint8_t* qs) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>(Nib(64 * c + l) | (Nib(64 * c + 32 + l) << 4));
}

// q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}, value = d*sc[j]*q - dmin*m[j] for sub-block
// j = e/32.
TEST(QuantDequant, Q4_K) {
  std::vector<uint8_t> blk(144);
  PutHalf(&blk[0], kHalfHalf);
  PutHalf(&blk[2], kHalfQuarter);
  std::memcpy(&blk[4], kPackedScales, 12);
  FillKNibbles(&blk[16]);
  const std::vector<float> y = Deq(GgmlType::Q4_K, blk, 256);
  // Hand-evaluated corners: (element, sub-block, code) -> value.
  EXPECT_EQ(y[0], 0.5f * 1 * 0 - 0.25f * 0);
  EXPECT_EQ(y[1], 0.5f * 1 * 5 - 0.25f * 0);
  EXPECT_EQ(y[32], 0.5f * 63 * 1 - 0.25f * 5);     // 30.25, high nibble of qs[0]
  EXPECT_EQ(y[64], 0.5f * 17 * 2 - 0.25f * 63);    // 1.25, low nibble of qs[32]
  EXPECT_EQ(y[150], 0.5f * 45 * 2 - 0.25f * 1);    // 44.75, sub-block 4 (scale from byte 8)
  EXPECT_EQ(y[170], 0.5f * 2 * 7 - 0.25f * 62);    // -8.5, sub-block 5
  EXPECT_EQ(y[200], 0.5f * 60 * 14 - 0.25f * 16);  // 416, sub-block 6
  EXPECT_EQ(y[255], 0.5f * 33 * 2 - 0.25f * 47);   // 21.25, high nibble of qs[127]
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.5f * kSc[e / 32] * Nib(e) - 0.25f * kMin[e / 32]) << e;
}

// q5_K: q4_K plus u8 qh[32] after the scales; element e's fifth bit is bit (e/32) of qh[e%32].
TEST(QuantDequant, Q5_K) {
  std::vector<uint8_t> blk(176);
  PutHalf(&blk[0], kHalfQuarter);
  PutHalf(&blk[2], kHalfHalf);
  std::memcpy(&blk[4], kPackedScales, 12);
  for (int l = 0; l < 32; ++l) blk[16 + l] = static_cast<uint8_t>((37 * l + 11) & 0xFF);
  FillKNibbles(&blk[48]);
  const std::vector<float> y = Deq(GgmlType::Q5_K, blk, 256);
  EXPECT_EQ(y[0], 0.25f * 1 * 16 - 0.5f * 0);     // qh[0] = 0x0B: bit 0 set
  EXPECT_EQ(y[32], 0.25f * 63 * 17 - 0.5f * 5);   // bit 1 set, nibble 1
  EXPECT_EQ(y[64], 0.25f * 17 * 2 - 0.5f * 63);   // bit 2 clear, nibble 2
  EXPECT_EQ(y[96], 0.25f * 32 * 19 - 0.5f * 40);  // bit 3 set, nibble 3
  EXPECT_EQ(y[255], 0.25f * 33 * 18 - 0.5f * 47); // qh[31] = 0x86: bit 7 set, nibble 2
  for (int e = 0; e < 256; ++e) {
    const int high = (((37 * (e % 32) + 11) & 0xFF) >> (e / 32)) & 1;
    EXPECT_EQ(y[e], 0.25f * kSc[e / 32] * (Nib(e) + 16 * high) - 0.5f * kMin[e / 32]) << e;
  }
}

// q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}, value = d * scales[e/16] * (q - 32).
// A sparse block with literal bytes, evaluated by hand from the layout: for e = 128h + 32k + l the low
// nibble is nibble k/2 of ql[64h + 32*(k%2) + l], the top two bits are bits 2k..2k+1 of qh[32h + l].
TEST(QuantDequant, Q6_KLiteralBytes) {
  std::vector<uint8_t> blk(210, 0);
  blk[0] = 0x21;        // ql[0]: e0 low nibble 1, e64 low nibble 2
  blk[32] = 0x43;       // ql[32]: e32 -> 3, e96 -> 4
  blk[64] = 0x65;       // ql[64]: e128 -> 5, e192 -> 6
  blk[128] = 0xE4;      // qh[0] = 11 10 01 00: e0 -> 0, e32 -> 1, e64 -> 2, e96 -> 3
  blk[128 + 32] = 0x1B; // qh[32] = 00 01 10 11: e128 -> 3, e160 -> 2, e192 -> 1, e224 -> 0
  const int8_t scales[16] = {1, 1, -1, 1, 2, 1, 3, 1, -2, 1, 1, 1, 4, 1, 1, 1};
  std::memcpy(&blk[192], scales, 16);
  PutHalf(&blk[208], kHalfOne);
  const std::vector<float> y = Deq(GgmlType::Q6_K, blk, 256);
  EXPECT_EQ(y[0], 1.0f * 1 * ((1 | 0 << 4) - 32));     // -31
  EXPECT_EQ(y[1], 1.0f * 1 * (0 - 32));                // untouched bytes: q = 0
  EXPECT_EQ(y[32], 1.0f * -1 * ((3 | 1 << 4) - 32));   // 13
  EXPECT_EQ(y[64], 1.0f * 2 * ((2 | 2 << 4) - 32));    // 4
  EXPECT_EQ(y[96], 1.0f * 3 * ((4 | 3 << 4) - 32));    // 60
  EXPECT_EQ(y[128], 1.0f * -2 * ((5 | 3 << 4) - 32));  // -42
  EXPECT_EQ(y[160], 1.0f * 1 * ((0 | 2 << 4) - 32));   // 0
  EXPECT_EQ(y[192], 1.0f * 4 * ((6 | 1 << 4) - 32));   // -40
  EXPECT_EQ(y[224], 1.0f * 1 * (0 - 32));
}

// Every element of a q6_K block with distinct 6-bit codes, all 16 scales (including -128 and 127) and a
// negative d.
TEST(QuantDequant, Q6_KAllElements) {
  auto code = [](int e) { return (11 * e + 5) % 64; };
  std::vector<uint8_t> blk(210, 0);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    blk[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>((code(e) & 15) << (4 * (k / 2)));
    blk[128 + 32 * h + l] |= static_cast<uint8_t>((code(e) >> 4) << (2 * k));
  }
  const int8_t scales[16] = {-128, 127, -1, 1, 5, -7, 64, -64, 3, 0, 100, -100, 12, -33, 2, 90};
  std::memcpy(&blk[192], scales, 16);
  PutHalf(&blk[208], kHalfMinusHalf);
  const std::vector<float> y = Deq(GgmlType::Q6_K, blk, 256);
  EXPECT_EQ(y[0], -0.5f * -128 * (5 - 32));
  EXPECT_EQ(y[16], -0.5f * 127 * (181 % 64 - 32));
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], -0.5f * scales[e / 16] * (code(e) - 32)) << e;
}

// Sub-block by sub-block: with every code 0 a K4 sub-block decodes to -dmin*m[j], with every code 15
// to d*sc[j]*15 - dmin*m[j], isolating the scale/min unpacking from the nibble placement.
TEST(QuantDequant, Q4_KScaleMinUnpackingPerSubBlock) {
  for (int j = 0; j < 8; ++j) {
    std::vector<uint8_t> blk(144, 0);
    PutHalf(&blk[0], kHalfOne);
    PutHalf(&blk[2], kHalfOne);
    std::memcpy(&blk[4], kPackedScales, 12);
    for (int l = 0; l < 32; ++l) blk[16 + 32 * (j / 2) + l] = static_cast<uint8_t>(j % 2 ? 0xF0 : 0x0F);
    const std::vector<float> y = Deq(GgmlType::Q4_K, blk, 256);
    for (int s = 0; s < 8; ++s) {
      const float expected = (s == j ? 15.0f * kSc[s] : 0.0f) - kMin[s];
      for (int l = 0; l < 32; ++l) ASSERT_EQ(y[32 * s + l], expected) << "j=" << j << " s=" << s;
    }
  }
}

}  // namespace
}  // namespace ember
