// The K-quant GEMM kernels (gemm_kquants.inc; every build in gemm_builds.h: AVX2, VNNI, VNNI under
// SIMDe) against the scalar reference, bitwise: random and extreme super-blocks, every tile size, odd
// strides and row pitches, and through MatMul.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_builds.h"
#include "kernels/gemm_kernels.h"
#include "kernels/kernel_test_util.h"
#include "kernels/matmul.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

using testing::MakeWeight;
using testing::RandomFloats;

constexpr GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// How a test fills weight super-blocks and activations.
enum class Fill {
  kRandom,     // random quant and scale bytes, random fp16 scales, random int8 activations
  kMax,        // every quant, sub-scale and min at its maximum (all-63 six-bit scales), -128 activations
  kMaxPos,     // as kMax with +127 activations
  kZeroRows,   // all-zero weight bytes (d = dmin = 0), random activations
  kMixed,      // random rows, some rows all-max, activations alternating -128 / 127
};

const char* FillName(Fill f) {
  switch (f) {
    case Fill::kRandom: return "random";
    case Fill::kMax: return "max";
    case Fill::kMaxPos: return "maxpos";
    case Fill::kZeroRows: return "zero";
    default: return "mixed";
  }
}

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = F32ToFp16(v);
  std::memcpy(p, &h, 2);
}

// Offsets of the fp16 scales in a super-block (d, and dmin or -1).
void HalfOffsets(GgmlType type, int* d, int* dmin) {
  *d = type == GgmlType::Q6_K ? 208 : 0;
  *dmin = type == GgmlType::Q6_K ? -1 : 2;
}

// One super-block of `type` at p.
void FillBlock(GgmlType type, Fill fill, bool max_row, std::mt19937& rng, uint8_t* p) {
  const uint32_t bytes = TypeInfo(type).block_bytes;
  int d_off, dmin_off;
  HalfOffsets(type, &d_off, &dmin_off);
  if (fill == Fill::kZeroRows) {
    std::memset(p, 0, bytes);
    return;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  if (max_row || fill == Fill::kMax || fill == Fill::kMaxPos) {
    std::memset(p, 0xFF, bytes);  // 15/31/63 quants, all six-bit scales and mins 63, Q6_K scales -1
    if (type == GgmlType::Q6_K) std::memset(p + 192, 0x7F, 16);  // Q6_K: the largest int8 scales
    PutHalf(p + d_off, 1.5f);
    if (dmin_off >= 0) PutHalf(p + dmin_off, 0.75f);
    return;
  }
  for (uint32_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
  PutHalf(p + d_off, scale(rng));
  if (dmin_off >= 0) PutHalf(p + dmin_off, scale(rng));
}

// Rows of n_in elements with `pitch` bytes between row starts (>= RowBytes).
std::vector<uint8_t> MakeRows(GgmlType type, Fill fill, int64_t n_in, int rows, size_t pitch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(pitch * rows + 1, 0xA5);
  const uint32_t bytes = TypeInfo(type).block_bytes;
  for (int r = 0; r < rows; ++r) {
    const bool max_row = fill == Fill::kMixed && r % 3 == 1;
    for (int64_t b = 0; b < n_in / 256; ++b) FillBlock(type, fill, max_row, rng, w.data() + r * pitch + b * bytes);
  }
  return w;
}

// Q8_K activations for a fill (kernel_test_util.h): arbitrary int8, -128 included.
testing::QuantActs MakeActs(Fill fill, int64_t n_in, int n_tok, uint32_t seed) {
  const testing::QuantPattern p = fill == Fill::kMax      ? testing::QuantPattern::kAllMin
                                  : fill == Fill::kMaxPos ? testing::QuantPattern::kAllMax
                                  : fill == Fill::kMixed  ? testing::QuantPattern::kAlternating
                                                          : testing::QuantPattern::kRandom;
  return testing::MakeQuantActs(256, 16, p, n_in, n_tok, seed);
}

GemmFn Gemm(GgmlType type) {
  EXPECT_TRUE(CpuHasAvx2()) << "this suite expects an AVX2+FMA+F16C machine";
  return Avx2GemmFn(type);
}

TEST(GemmKQuant, EveryKQuantHasAKernel) {
  for (GgmlType type : kKTypes) EXPECT_NE(Gemm(type), nullptr) << GgmlTypeName(type);
  for (const testing::GemmBuild& b : testing::GemmBuilds()) {
    for (GgmlType type : kKTypes) EXPECT_NE(b.fn(type), nullptr) << b.name << " " << GgmlTypeName(type);
  }
  EXPECT_EQ(avx2::KQuantGemmFn(GgmlType::Q8_0), nullptr);
  EXPECT_EQ(avx2::KQuantGemmFn(GgmlType::F16), nullptr);
}

// Every (row, token) of one call equals the reference DotFn's, bit for bit, and nothing outside the
// 8 x n_acts outputs is written.
void ExpectKernelMatches(GemmFn (*build)(GgmlType), const char* build_name, GgmlType type, Fill fill, int64_t n_in,
                         size_t pitch_extra, int64_t stride, uint32_t seed) {
  SCOPED_TRACE(build_name);
  const GemmFn gemm = build(type);
  ASSERT_NE(gemm, nullptr);
  const DotFn ref = ReferenceDotFn(type);
  const size_t pitch = RowBytes(type, static_cast<uint64_t>(n_in)) + pitch_extra;
  const std::vector<uint8_t> w = MakeRows(type, fill, n_in, kGemmRows, pitch, seed);
  const testing::QuantActs a = MakeActs(fill, n_in, kGemmMaxTile, seed + 1);
  const float kSentinel = -12345.5f;
  for (int n_acts = 1; n_acts <= kGemmMaxTile; ++n_acts) {
    std::vector<float> got(static_cast<size_t>(stride * kGemmMaxTile + 8), kSentinel);
    std::vector<float> want(got.size(), kSentinel);
    gemm(w.data(), pitch, n_in, a.rows.data(), n_acts, got.data(), stride);
    for (int r = 0; r < kGemmRows; ++r) {
      ref(w.data() + r * pitch, n_in, a.rows.data(), n_acts, want.data() + r, stride);
    }
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << GgmlTypeName(type) << " fill=" << FillName(fill) << " n_in=" << n_in << " n_acts=" << n_acts
        << " stride=" << stride << " got[0]=" << got[0] << " want[0]=" << want[0];
  }
}

// The same check for every build of the kernels.
void ExpectKernelsMatch(GgmlType type, Fill fill, int64_t n_in, size_t pitch_extra, int64_t stride, uint32_t seed) {
  for (const testing::GemmBuild& b : testing::GemmBuilds()) {
    ExpectKernelMatches(b.fn, b.name, type, fill, n_in, pitch_extra, stride, seed);
  }
}

class GemmKQuantTypeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemmKQuantTypeTest, RandomBlocksBitwiseEqualReference) {
  uint32_t seed = 100;
  for (int64_t n_in : {256, 512, 1536, 4096, 256 * 11}) {
    ExpectKernelsMatch(GetParam(), Fill::kRandom, n_in, 0, 8, seed++);
    ExpectKernelsMatch(GetParam(), Fill::kRandom, n_in, 3, 13, seed++);  // odd pitch: unaligned rows
  }
}

TEST_P(GemmKQuantTypeTest, ExtremeBlocksBitwiseEqualReference) {
  uint32_t seed = 200;
  for (Fill fill : {Fill::kMax, Fill::kMaxPos, Fill::kZeroRows, Fill::kMixed}) {
    for (int64_t n_in : {256, 1536, 256 * 11}) ExpectKernelsMatch(GetParam(), fill, n_in, 1, 9, seed++);
  }
}

// The extremes really are extremes: with every quant at its maximum and -128 activations the
// int16 partial sums sit at the bounds the kernel is built around and the result is still exact.
TEST_P(GemmKQuantTypeTest, MaxBlocksGiveTheExactProduct) {
  const GgmlType type = GetParam();
  const int64_t n_in = 256;
  const size_t pitch = RowBytes(type, n_in);
  const std::vector<uint8_t> w = MakeRows(type, Fill::kMax, n_in, kGemmRows, pitch, 1);
  const testing::QuantActs a = MakeActs(Fill::kMax, n_in, 1, 2);
  for (const testing::GemmBuild& b : testing::GemmBuilds()) {
  float got[8];
  b.fn(type)(w.data(), pitch, n_in, a.rows.data(), 1, got, 8);
  // Q4_K: 15 * 63 * -128 * 256 * 1.5 * dy - 0.75 * 63 * -128 * 256 * dy; Q5_K with 31;
  // Q6_K: (63 - 32) * 127 * -128 * 256 * 1.5 * dy.
  const double dy = a.d[0];
  double want = 0;
  if (type == GgmlType::Q6_K) {
    want = 31.0 * 127 * -128 * 256 * 1.5 * dy;
  } else {
    const double q = type == GgmlType::Q4_K ? 15 : 31;
    want = q * 63 * -128 * 256 * 1.5 * dy - 0.75 * 63 * -128 * 256 * dy;
  }
  for (int r = 0; r < 8; ++r) EXPECT_NEAR(got[r], want, 1e-5 * std::fabs(want)) << b.name << " " << r;
  }
}

TEST_P(GemmKQuantTypeTest, MatMulBitwiseEqualReferenceAndPerToken) {
  const GgmlType type = GetParam();
  for (int64_t n_in : {256, 1536}) {
    const int64_t n_out = 8 * 5 + 3;  // a tail of rows the row kernel serves
    auto w = MakeWeight(type, n_in, n_out, 31);
    const int64_t max_tok = 40;
    const auto x = RandomFloats(static_cast<size_t>(n_in * max_tok), 32);
    for (int threads = 1; threads <= 3; ++threads) {
      ThreadPool pool(threads);
      for (int64_t n_tok = 1; n_tok <= max_tok; ++n_tok) {
        if (threads > 1 && n_tok % 3 != 0 && n_tok != 1 && n_tok != max_tok) continue;  // keep it quick
        std::vector<float> y(static_cast<size_t>(n_tok * n_out)), ref(y.size()), one(y.size());
        MatMul(w.view, x.data(), n_tok, y.data(), pool);
        MatMulReference(w.view, x.data(), n_tok, ref.data());
        for (int64_t t = 0; t < n_tok; ++t) MatMul(w.view, x.data() + t * n_in, 1, one.data() + t * n_out, pool);
        ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0)
            << GgmlTypeName(type) << " n_in=" << n_in << " n_tok=" << n_tok << " threads=" << threads;
        ASSERT_EQ(std::memcmp(y.data(), one.data(), y.size() * sizeof(float)), 0)
            << GgmlTypeName(type) << " n_in=" << n_in << " n_tok=" << n_tok << " threads=" << threads;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KQuants, GemmKQuantTypeTest, ::testing::ValuesIn(kKTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& i) { return std::string(GgmlTypeName(i.param)); });

}  // namespace
}  // namespace ember::kernels
