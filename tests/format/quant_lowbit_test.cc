// The low-bit formats q2_K, q3_K, iq4_nl, iq4_xs and mxfp4: known-answer dequantization of hand-built
// blocks (bytes packed here from the ggml layouts, expected values from the format formulas, with the
// grids and the FP4 definition written out independently of src/format), then quantize -> dequantize
// round trips (error bounds, exact reproduction of on-grid values, zero and extreme blocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "format/quant.h"

namespace ember {
namespace {

// ggml's kvalues_iq4nl.
constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// OCP MX FP4 (E2M1): sign bit 3, then exponent (2 bits, bias 1) and mantissa (1 bit).
double Fp4(int code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return code & 8 ? -mag : mag;
}

constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfMinus2 = 0xC000;   // -2.0

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

TEST(QuantLowBitTypes, TableGeometryAndNames) {
  struct Geo { GgmlType t; uint32_t id, elems, bytes; const char* name; };
  for (const Geo& g : {Geo{GgmlType::Q2_K, 10, 256, 84, "q2_k"}, Geo{GgmlType::Q3_K, 11, 256, 110, "q3_k"},
                       Geo{GgmlType::IQ4_NL, 20, 32, 18, "iq4_nl"}, Geo{GgmlType::IQ4_XS, 23, 256, 136, "iq4_xs"},
                       Geo{GgmlType::MXFP4, 39, 32, 17, "mxfp4"}}) {
    EXPECT_EQ(static_cast<uint32_t>(g.t), g.id);
    const GgmlTypeTraits tr = TypeInfo(g.t);
    EXPECT_EQ(tr.block_elems, g.elems) << g.name;
    EXPECT_EQ(tr.block_bytes, g.bytes) << g.name;
    EXPECT_TRUE(tr.supported) << g.name;
    EXPECT_TRUE(CanQuantize(g.t)) << g.name;
    ASSERT_TRUE(GgmlTypeFromName(g.name).has_value()) << g.name;
    EXPECT_EQ(*GgmlTypeFromName(g.name), g.t);
  }
}

// iq4_nl {f16 d; u8 qs[16]}: byte j = index of element j (low nibble) | element j+16 (high nibble).
TEST(QuantLowBitDequant, IQ4_NL) {
  std::vector<uint8_t> blk(36);
  PutHalf(&blk[0], kHalfHalf);
  PutHalf(&blk[18], kHalfMinus2);
  for (int j = 0; j < 16; ++j) {
    blk[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    blk[20 + j] = static_cast<uint8_t>(((j * 7) % 16) | (j << 4));
  }
  const std::vector<float> y = Deq(GgmlType::IQ4_NL, blk, 64);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIq4[j]) << j;
    EXPECT_EQ(y[16 + j], 0.5f * kIq4[15 - j]) << j;
    EXPECT_EQ(y[32 + j], -2.0f * kIq4[(j * 7) % 16]) << j;
    EXPECT_EQ(y[48 + j], -2.0f * kIq4[j]) << j;
  }
}

// mxfp4 {u8 e; u8 qs[16]}: value = FP4(code) * 2^(e - 127), e = 0 and 1 giving f32 subnormal scales.
TEST(QuantLowBitDequant, MXFP4) {
  for (int e : {0, 1, 2, 100, 127, 130, 200, 252}) {
    std::vector<uint8_t> blk(17);
    blk[0] = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) blk[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const std::vector<float> y = Deq(GgmlType::MXFP4, blk, 32);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[j], static_cast<float>(std::ldexp(Fp4(j), e - 127))) << "e=" << e << " j=" << j;
      EXPECT_EQ(y[16 + j], static_cast<float>(std::ldexp(Fp4(15 - j), e - 127))) << "e=" << e << " j=" << j;
    }
  }
}

// q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}: element e = 128h + 32k + l has q = bits 2k..2k+1 of
// qs[32h + l]; sub-block j = e/16 has scale scales[j] & 15 and min scales[j] >> 4;
// value = d*scale*q - dmin*min.
TEST(QuantLowBitDequant, Q2_K) {
  std::vector<uint8_t> blk(84);
  for (int j = 0; j < 16; ++j) blk[j] = static_cast<uint8_t>(((j * 5 + 3) % 16) | (((j * 3) % 16) << 4));
  std::vector<int> q(256);
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 7 + e / 16) % 4;
    blk[16 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * ((e % 128) / 32)));
  }
  PutHalf(&blk[80], kHalfHalf);
  PutHalf(&blk[82], kHalfQuarter);
  const std::vector<float> y = Deq(GgmlType::Q2_K, blk, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 16;
    const double want = 0.5 * ((j * 5 + 3) % 16) * q[e] - 0.25 * ((j * 3) % 16);
    ASSERT_EQ(y[e], static_cast<float>(want)) << e;
  }
}

// q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: q's low bits as q2_K, bit 2 = bit 4h + k of
// hmask[l]; value = d * (sc - 32) * (q - 4) with sc six bits: low nibble in scales[j] (j < 8) or the
// high nibble of scales[j - 8], top two bits at 2*(j/4) of scales[8 + j%4].
TEST(QuantLowBitDequant, Q3_K) {
  std::vector<uint8_t> blk(110);
  int sc[16];
  for (int j = 0; j < 16; ++j) sc[j] = (j * 23 + 5) % 64;
  sc[3] = 0;   // -32
  sc[12] = 63;  // +31
  for (int j = 0; j < 16; ++j) {
    blk[96 + (j % 8)] |= static_cast<uint8_t>((sc[j] & 15) << (j < 8 ? 0 : 4));
    blk[96 + 8 + j % 4] |= static_cast<uint8_t>((sc[j] >> 4) << (2 * (j / 4)));
  }
  std::vector<int> q(256);
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 5 + e / 32) % 8;
    blk[32 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>((q[e] & 3) << (2 * ((e % 128) / 32)));
    blk[e % 32] |= static_cast<uint8_t>((q[e] >> 2) << (4 * (e / 128) + (e % 128) / 32));
  }
  PutHalf(&blk[108], kHalfQuarter);
  const std::vector<float> y = Deq(GgmlType::Q3_K, blk, 256);
  for (int e = 0; e < 256; ++e) {
    ASSERT_EQ(y[e], static_cast<float>(0.25 * (sc[e / 16] - 32) * (q[e] - 4))) << e;
  }
}

// A few literal q3_K scale bytes decoded by hand: scales[0] = 0x21 gives sub-block 0 low nibble 1 and
// sub-block 8 low nibble 2; scales[8] = 0b11100100 gives top bits 0 (sub-block 0), 1 (4), 2 (8), 3 (12).
TEST(QuantLowBitDequant, Q3_KLiteralScaleBytes) {
  std::vector<uint8_t> blk(110);
  blk[96 + 0] = 0x21;
  blk[96 + 4] = 0x7A;  // sub-block 4: low nibble 0xA; sub-block 12: low nibble 7
  blk[96 + 8] = 0xE4;
  PutHalf(&blk[108], 0x3C00);  // 1.0
  // All quants 7 (q - 4 = 3): every hmask bit and every low bit set.
  std::memset(blk.data(), 0xFF, 96);
  const std::vector<float> y = Deq(GgmlType::Q3_K, blk, 256);
  EXPECT_EQ(y[0], 3.0f * (1 - 32));          // sc0 = 1
  EXPECT_EQ(y[4 * 16], 3.0f * (26 - 32));    // sc4 = 0xA | 1 << 4
  EXPECT_EQ(y[8 * 16], 3.0f * (34 - 32));    // sc8 = 2 | 2 << 4
  EXPECT_EQ(y[12 * 16], 3.0f * (55 - 32));   // sc12 = 7 | 3 << 4
  EXPECT_EQ(y[16], 3.0f * (0 - 32));         // sc1: all-zero bytes
}

// iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: sub-block ib (32 elements) is laid out like
// an iq4_nl block at qs[16ib..]; scale = (nibble ib%2 of scales_l[ib/2] | bits 2ib..2ib+1 of scales_h
// << 4) - 32.
TEST(QuantLowBitDequant, IQ4_XS) {
  std::vector<uint8_t> blk(136);
  PutHalf(&blk[0], kHalfQuarter);
  const int ls[8] = {0, 63, 32, 1, 45, 17, 31, 50};
  uint16_t scales_h = 0;
  for (int ib = 0; ib < 8; ++ib) {
    blk[4 + ib / 2] |= static_cast<uint8_t>((ls[ib] & 15) << (4 * (ib % 2)));
    scales_h |= static_cast<uint16_t>((ls[ib] >> 4) << (2 * ib));
  }
  PutHalf(&blk[2], scales_h);
  for (int i = 0; i < 128; ++i) blk[8 + i] = static_cast<uint8_t>((i * 11 + 3) % 256);
  const std::vector<float> y = Deq(GgmlType::IQ4_XS, blk, 256);
  for (int e = 0; e < 256; ++e) {
    const int ib = e / 32, j = e % 32;
    const uint8_t byte = blk[8 + 16 * ib + j % 16];
    const int idx = j < 16 ? byte & 15 : byte >> 4;
    ASSERT_EQ(y[e], static_cast<float>(0.25 * (ls[ib] - 32) * kIq4[idx])) << e;
  }
}

// ---- Round trips --------------------------------------------------------------------------------

constexpr GgmlType kLowBit[] = {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};
constexpr size_t kN = 256 * 16;

std::vector<float> RoundTrip(GgmlType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowBytes(t, x.size()));
  const Status st = Quantize(t, x.data(), q.data(), x.size());
  EXPECT_TRUE(st.ok()) << GgmlTypeName(t) << ": " << st.ToString();
  std::vector<float> y(x.size(), NAN);
  EXPECT_TRUE(Dequantize(t, q.data(), y.data(), x.size()).ok());
  return y;
}

std::vector<float> Gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = g(rng);
  return x;
}

double Rms(const std::vector<float>& a, const std::vector<float>& b) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return std::sqrt(se / a.size());
}

// RMS error / sigma on N(0, sigma) data, at weight-like and tiny magnitudes (the fp16 steps then
// subnormal). Bounds are ~10% above what ember's quantizers measure (q2_K 0.261, q3_K 0.143, iq4_nl
// 0.074, iq4_xs 0.075, mxfp4 0.112); q4_0's plain quantizer (0.085) is the yardstick the 4-bit
// non-linear types must beat.
TEST(QuantLowBitRoundTrip, GaussianRmsWithinBounds) {
  const std::pair<GgmlType, double> bounds[] = {{GgmlType::Q2_K, 0.285}, {GgmlType::Q3_K, 0.157},
                                                {GgmlType::IQ4_NL, 0.081}, {GgmlType::IQ4_XS, 0.082},
                                                {GgmlType::MXFP4, 0.122}};
  for (const auto& [type, bound] : bounds) {
    for (float sigma : {1.0f, 0.02f, 1e-4f}) {
      const std::vector<float> x = Gaussian(kN, 5, sigma);
      EXPECT_LT(Rms(RoundTrip(type, x), x), bound * sigma) << GgmlTypeName(type) << " sigma " << sigma;
    }
  }
  const std::vector<float> x = Gaussian(kN, 6);
  const double q4 = Rms(RoundTrip(GgmlType::Q4_0, x), x);
  EXPECT_LT(Rms(RoundTrip(GgmlType::IQ4_NL, x), x), q4);
  EXPECT_LT(Rms(RoundTrip(GgmlType::IQ4_XS, x), x), q4);
  EXPECT_LT(Rms(RoundTrip(GgmlType::Q3_K, x), x), Rms(RoundTrip(GgmlType::Q2_K, x), x));
}

// iq4_nl per element: within half the widest grid gap (24 / 2) of the block step |d| >= amax/130, or
// a clip of the extreme by at most 3 grid units: 0.13 * amax covers both.
TEST(QuantLowBitRoundTrip, IQ4_NLMaxErrorWithinHalfGridStep) {
  for (const auto& x : {Gaussian(kN, 7), Gaussian(kN, 8, 1e-3f)}) {
    const std::vector<float> y = RoundTrip(GgmlType::IQ4_NL, x);
    for (size_t b = 0; b < kN / 32; ++b) {
      double amax = 0;
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) ASSERT_LE(std::fabs(y[i] - x[i]), 0.13 * amax) << i;
    }
  }
}

// Values already on a type's grid (with the element that fixes each scale present) come back exactly.
TEST(QuantLowBitRoundTrip, ExactOnGrid) {
  std::mt19937 rng(12);
  std::vector<float> x(kN);
  // iq4_nl: d = 2^-5, one element per block at index 0 (-127) fixes d.
  for (size_t i = 0; i < kN; ++i) x[i] = std::ldexp(1.0f, -5) * static_cast<float>(kIq4[i % 32 == (i / 32) % 32 ? 0 : rng() % 16]);
  std::vector<float> y = RoundTrip(GgmlType::IQ4_NL, x);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << "iq4_nl " << i;
  // mxfp4: scale 2^(e-127) per block, a +-6 (code 7 / 15) in every block.
  for (size_t i = 0; i < kN; ++i) {
    const int code = i % 32 == (i / 32) % 32 ? 7 + 8 * static_cast<int>(i % 2) : static_cast<int>(rng() % 16);
    x[i] = static_cast<float>(std::ldexp(Fp4(code), static_cast<int>(100 + (i / 32) % 50) - 127));
  }
  y = RoundTrip(GgmlType::MXFP4, x);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << "mxfp4 " << i;
  // q3_K: power-of-two d, sub-block scale codes with -32 present, codes -4..3 with -4 in every sub-block.
  const int sc3[16] = {-32, 17, -5, 31, 1, -1, 8, -20, 30, -32, 3, 12, -7, 25, 2, -16};
  for (size_t i = 0; i < kN; ++i) {
    const int q = i % 16 == (i / 16) % 16 ? -4 : static_cast<int>(rng() % 8) - 4;
    x[i] = std::ldexp(1.0f, -9) * static_cast<float>(sc3[(i % 256) / 16] * q);
  }
  y = RoundTrip(GgmlType::Q3_K, x);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << "q3_K " << i;
}

TEST(QuantLowBitRoundTrip, ZeroBlocksStayZero) {
  const std::vector<float> zeros(kN, 0.0f);
  for (GgmlType t : kLowBit) {
    const std::vector<float> y = RoundTrip(t, zeros);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], 0.0f) << GgmlTypeName(t) << " " << i;
  }
}

// Tiny, huge and mixed magnitudes: outputs stay finite and within the input's magnitude; scales that
// underflow give (near) zero; mxfp4's largest scale stops where its top value would overflow f32.
TEST(QuantLowBitRoundTrip, ExtremeMagnitudesStayFinite) {
  std::vector<float> x = Gaussian(kN, 9);
  for (size_t i = 0; i < kN; ++i) {
    switch ((i / 256) % 4) {
      case 0: x[i] *= 1e-30f; break;
      case 1: x[i] = (i % 2 ? 1.0f : -1.0f) * 6e4f; break;
      case 2: x[i] *= (i % 32 == 0) ? 1e7f : 1e-3f; break;
      default: x[i] = (i % 3 == 0) ? FLT_MAX : -FLT_MAX; break;
    }
  }
  for (GgmlType t : kLowBit) {
    const std::vector<float> y = RoundTrip(t, x);
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << GgmlTypeName(t) << " element " << i << " of " << x[i];
      double amax = 0;
      for (size_t k = i / 256 * 256; k < i / 256 * 256 + 256; ++k) amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
      ASSERT_LE(std::fabs(y[i]), 1.2 * amax) << GgmlTypeName(t) << " element " << i;
      if ((i / 256) % 4 == 0) {
        ASSERT_LE(std::fabs(y[i] - x[i]), 1e-29f) << GgmlTypeName(t);
      }
    }
  }
}

}  // namespace
}  // namespace ember
