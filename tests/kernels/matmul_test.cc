#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/dot_kernels.h"
#include "kernels/kernel_test_util.h"

namespace ember::kernels {
namespace {

using testing::BitwiseEqual;
using testing::kAllTypes;
using testing::MakeWeight;
using testing::RandomFloats;
using testing::RoundUpToBlock;

// The activations after conversion to the dot type, dequantized (what the kernel really multiplies).
std::vector<float> DequantizedActs(GgmlType type, const float* x, int64_t n_tok, int64_t n_in) {
  ActBatch acts;
  acts.Convert(DotTypeOf(type), x, n_tok, n_in);
  std::vector<float> out(static_cast<size_t>(n_tok * n_in));
  const int64_t blk = DotTypeOf(type) == DotType::kQ8_K ? 256 : 32;
  for (int64_t t = 0; t < n_tok; ++t) {
    const ActRow r = acts.Row(t);
    for (int64_t i = 0; i < n_in; ++i) {
      out[t * n_in + i] = r.f != nullptr ? r.f[i] : r.d[i / blk] * r.q[i];
    }
  }
  return out;
}

class MatMulTypeTest : public ::testing::TestWithParam<GgmlType> {};

// The reference against a float64 oracle: dequantized weights · dequantized dot-type activations.
// The only differences are f32 rounding of block scales/accumulation (1e-5 relative to sum |w x|)
// and, for Q4_1/Q5_1, ggml's fp16-rounded s = d * sum(q) term (2e-3 of sum |m s|, bounded here
// by the generous 1e-3 * sum|w||x| term below).
TEST_P(MatMulTypeTest, ReferenceMatchesFloat64Oracle) {
  const GgmlType type = GetParam();
  const int64_t n_in = RoundUpToBlock(type, 512), n_out = 7, n_tok = 3;
  auto w = MakeWeight(type, n_in, n_out, 11);
  const auto x = RandomFloats(static_cast<size_t>(n_in * n_tok), 12);
  std::vector<float> y(static_cast<size_t>(n_out * n_tok));
  MatMulReference(w.view, x.data(), n_tok, y.data());
  const auto xq = DequantizedActs(type, x.data(), n_tok, n_in);
  std::vector<float> wrow(static_cast<size_t>(n_in));
  for (int64_t o = 0; o < n_out; ++o) {
    ASSERT_TRUE(Dequantize(type, w.view.data + o * w.view.row_bytes, wrow.data(), n_in).ok());
    for (int64_t t = 0; t < n_tok; ++t) {
      double dot = 0, mag = 0, exact = 0, exact_mag = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        dot += static_cast<double>(wrow[i]) * xq[t * n_in + i];
        mag += std::fabs(static_cast<double>(wrow[i]) * xq[t * n_in + i]);
        exact += static_cast<double>(wrow[i]) * x[t * n_in + i];
        exact_mag += std::fabs(static_cast<double>(wrow[i]) * x[t * n_in + i]);
      }
      const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
      const double tol = 1e-5 * mag + (has_min ? 1e-3 * mag : 0.0) + 1e-6;
      EXPECT_NEAR(y[t * n_out + o], dot, tol) << GgmlTypeName(type) << " o=" << o << " t=" << t;
      // And against the unquantized activations: the dot-type rounding costs < 2% of sum |w x|.
      EXPECT_NEAR(y[t * n_out + o], exact, 0.02 * exact_mag) << GgmlTypeName(type);
    }
  }
}

TEST_P(MatMulTypeTest, FastMatchesReferenceBitwise) {
  const GgmlType type = GetParam();
  ThreadPool pool(2);
  for (int64_t n_in_raw : {32, 45, 256, 288, 300, 896, 1024}) {
    const int64_t n_in = RoundUpToBlock(type, n_in_raw);
    for (int64_t n_out : {1, 5, 33}) {
      auto w = MakeWeight(type, n_in, n_out, static_cast<uint32_t>(n_in * 31 + n_out));
      for (int64_t n_tok : {1, 3, 17, 64}) {
        const auto x = RandomFloats(static_cast<size_t>(n_in * n_tok), static_cast<uint32_t>(n_tok), 2.0f);
        std::vector<float> fast(static_cast<size_t>(n_out * n_tok)), ref(fast.size());
        MatMul(w.view, x.data(), n_tok, fast.data(), pool);
        MatMulReference(w.view, x.data(), n_tok, ref.data());
        ASSERT_TRUE(BitwiseEqual(fast, ref))
            << GgmlTypeName(type) << " n_in=" << n_in << " n_out=" << n_out << " n_tok=" << n_tok;
      }
    }
  }
}

// Row t of a batched call is bitwise the single-token result, for any batch size and thread count.
TEST_P(MatMulTypeTest, BatchAndThreadInvariance) {
  const GgmlType type = GetParam();
  const int64_t n_in = RoundUpToBlock(type, 768), n_out = 37;
  auto w = MakeWeight(type, n_in, n_out, 5);
  ThreadPool one(1), two(2), three(3);
  std::mt19937 rng(static_cast<uint32_t>(type) + 100);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n_tok = 2 + static_cast<int64_t>(rng() % 40);
    const auto x = RandomFloats(static_cast<size_t>(n_in * n_tok), rng());
    std::vector<float> batch(static_cast<size_t>(n_out * n_tok)), batch2(batch.size()), batch3(batch.size());
    MatMul(w.view, x.data(), n_tok, batch.data(), two);
    MatMul(w.view, x.data(), n_tok, batch2.data(), one);
    MatMul(w.view, x.data(), n_tok, batch3.data(), three);
    EXPECT_TRUE(BitwiseEqual(batch, batch2)) << GgmlTypeName(type);
    EXPECT_TRUE(BitwiseEqual(batch, batch3)) << GgmlTypeName(type);
    for (int64_t t = 0; t < n_tok; ++t) {
      std::vector<float> single(static_cast<size_t>(n_out));
      MatMul(w.view, x.data() + t * n_in, 1, single.data(), t % 2 ? one : two);
      const std::vector<float> row(batch.begin() + t * n_out, batch.begin() + (t + 1) * n_out);
      ASSERT_TRUE(BitwiseEqual(single, row)) << GgmlTypeName(type) << " n_tok=" << n_tok << " t=" << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatMulTypeTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(GgmlTypeName(info.param)); });

// MatMulShared gives each weight exactly what its own MatMul gives: with a shared dot type (Q8_0 and
// Q4_0 both take Q8_0 activations; Q4_K and Q6_K both Q8_K), with mixed dot types (the fallback), and
// with odd row counts that make a thread's range straddle the weights' boundaries.
TEST(MatMulTest, SharedEqualsSeparateCalls) {
  const std::vector<std::vector<GgmlType>> sets = {{GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q8_0},
                                                   {GgmlType::Q4_K, GgmlType::Q6_K},
                                                   {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32}};
  ThreadPool two(2), three(3);
  for (const auto& types : sets) {
    const int64_t n_in = 512;
    std::vector<testing::TestWeight> ws;
    for (size_t i = 0; i < types.size(); ++i) ws.push_back(MakeWeight(types[i], n_in, 13 + 6 * static_cast<int64_t>(i), 40 + i));
    for (int64_t n_tok : {1, 5}) {
      const auto x = RandomFloats(static_cast<size_t>(n_in * n_tok), 41 + n_tok);
      for (ThreadPool* pool : {&two, &three}) {
        std::vector<std::vector<float>> shared(ws.size()), separate(ws.size());
        std::vector<MatMulOut> outs;
        for (size_t i = 0; i < ws.size(); ++i) {
          shared[i].assign(static_cast<size_t>(ws[i].view.n_out * n_tok), -1.0f);
          separate[i].assign(shared[i].size(), -2.0f);
          MatMul(ws[i].view, x.data(), n_tok, separate[i].data(), *pool);
          outs.push_back({&ws[i].view, shared[i].data()});
        }
        MatMulShared(outs.data(), static_cast<int>(outs.size()), x.data(), n_tok, *pool);
        for (size_t i = 0; i < ws.size(); ++i) {
          EXPECT_TRUE(BitwiseEqual(shared[i], separate[i])) << GgmlTypeName(types[i]) << " n_tok=" << n_tok;
        }
      }
    }
  }
}

// Raw Q8_0 bytes including -128 weights (never produced by ggml's quantizer but legal in a file):
// the SIMD sign trick must not overflow.
TEST(MatMulTest, Q8_0ExtremeWeights) {
  const int64_t n_in = 256, n_out = 4;
  std::vector<uint8_t> bytes(RowBytes(GgmlType::Q8_0, n_in) * n_out);
  std::mt19937 rng(3);
  for (size_t b = 0; b < bytes.size(); b += 34) {
    const uint16_t d = 0x3c00;  // 1.0
    std::memcpy(&bytes[b], &d, 2);
    for (int j = 0; j < 32; ++j) bytes[b + 2 + j] = (rng() % 3 == 0) ? 0x80 : static_cast<uint8_t>(rng());
  }
  WeightView w{GgmlType::Q8_0, bytes.data(), n_in, n_out, RowBytes(GgmlType::Q8_0, n_in)};
  const auto x = RandomFloats(n_in * 5, 9);
  std::vector<float> fast(n_out * 5), ref(n_out * 5);
  ThreadPool pool(2);
  MatMul(w, x.data(), 5, fast.data(), pool);
  MatMulReference(w, x.data(), 5, ref.data());
  EXPECT_TRUE(BitwiseEqual(fast, ref));
}

// 4/5-bit blocks at their largest (all bits set) and smallest (all clear) against activations at
// +-127: the SIMD kernels add up to 16 products in int16 lanes before widening (4-bit types), which
// must not wrap. Every row is all-max or all-min, so each block reaches the bound.
TEST(MatMulTest, SmallQuantExtremeBlocks) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    SCOPED_TRACE(GgmlTypeName(type));
    const int64_t n_in = 32 * 19, n_out = 6, n_tok = 5;  // 19 blocks: two full groups of 8 + a tail
    const size_t rb = RowBytes(type, n_in), bb = TypeInfo(type).block_bytes;
    const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
    std::vector<uint8_t> bytes(rb * n_out);
    for (int64_t o = 0; o < n_out; ++o) {
      for (size_t b = 0; b < rb; b += bb) {
        uint8_t* blk = &bytes[o * rb + b];
        std::memset(blk, o % 2 == 0 ? 0xFF : 0x00, bb);
        const uint16_t one = 0x3c00;
        std::memcpy(blk, &one, 2);
        if (has_min) std::memcpy(blk + 2, &one, 2);
      }
    }
    WeightView w{type, bytes.data(), n_in, n_out, rb};
    std::vector<float> x(n_in * n_tok);
    for (int64_t i = 0; i < n_in; ++i) {
      x[i] = 1.0f;                                   // q = +127 everywhere
      x[n_in + i] = -1.0f;                           // q = -127 everywhere
      x[2 * n_in + i] = (i / 32) % 2 ? 1.0f : -1.0f;  // sign flips per block
    }
    const auto rnd = RandomFloats(n_in * 2, 21);
    std::copy(rnd.begin(), rnd.end(), x.begin() + 3 * n_in);
    std::vector<float> fast(n_out * n_tok), ref(n_out * n_tok);
    ThreadPool pool(2);
    MatMul(w, x.data(), n_tok, fast.data(), pool);
    MatMulReference(w, x.data(), n_tok, ref.data());
    EXPECT_TRUE(BitwiseEqual(fast, ref));
    // Row 0 (all max) against +-127: the reference itself is right, (15 - 8) * n_in for Q4_0 etc.
    const double wmax = type == GgmlType::Q4_0 ? 7 : type == GgmlType::Q5_0 ? 15 : type == GgmlType::Q4_1 ? 16 : 32;
    EXPECT_NEAR(ref[0], wmax * n_in, 1e-3 * wmax * n_in);
    EXPECT_NEAR(ref[n_out], -wmax * n_in, 1e-3 * wmax * n_in);
  }
}

// The best tier this CPU runs, checked here independently of the dispatch code.
KernelTier CpuTier() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return avx512 ? KernelTier::kAvx512 : avx2 ? KernelTier::kAvx2 : KernelTier::kScalar;
}

// MatMul runs the best tier of this CPU (ember's builds target x86-64-v3 at least, so never scalar
// unless EMBER_KERNELS says so), and that is the path the tests above exercise.
TEST(MatMulTest, DispatchesToBestTier) {
  const KernelTier want = std::min(CpuTier(), ParseKernelCeiling(std::getenv("EMBER_KERNELS")));
  const char* names[] = {"scalar", "avx2", "avx512"};
  EXPECT_STREQ(MatMulBackendName(), names[static_cast<int>(want)]);
  if (std::getenv("EMBER_KERNELS") == nullptr) {
    EXPECT_NE(want, KernelTier::kScalar);
  }
}

TEST(MatMulTest, KernelCeiling) {
  EXPECT_EQ(ParseKernelCeiling(nullptr), KernelTier::kAvx512);
  EXPECT_EQ(ParseKernelCeiling("scalar"), KernelTier::kScalar);
  EXPECT_EQ(ParseKernelCeiling("avx2"), KernelTier::kAvx2);
  EXPECT_EQ(ParseKernelCeiling("avx512"), KernelTier::kAvx512);
  for (const char* junk : {"", "AVX2", "avx", "sse4", "avx2 "}) EXPECT_EQ(ParseKernelCeiling(junk), KernelTier::kAvx512) << junk;
  // Each ceiling picks the best tier at or below it that the CPU has, and the kernel of that tier;
  // K-quants have no AVX-512 kernel, so they stop at AVX2 even without a ceiling.
  for (GgmlType type : kAllTypes) {
    for (KernelTier ceiling : {KernelTier::kScalar, KernelTier::kAvx2, KernelTier::kAvx512}) {
      KernelTier want = std::min(CpuTier(), ceiling);
      if (want == KernelTier::kAvx512 && Avx512DotFn(type) == nullptr) want = KernelTier::kAvx2;
      const DotFn by_tier[] = {ReferenceDotFn(type), Avx2DotFn(type), Avx512DotFn(type)};
      KernelTier got;
      const DotFn fn = SelectDotFn(type, ceiling, &got);
      EXPECT_EQ(got, want) << GgmlTypeName(type) << " ceiling=" << static_cast<int>(ceiling);
      EXPECT_EQ(fn, by_tier[static_cast<int>(want)]) << GgmlTypeName(type);
      EXPECT_NE(fn, nullptr);
    }
  }
}

TEST(MatMulTest, CheckWeightRejectsBadViews) {
  std::vector<uint8_t> bytes(1024);
  WeightView ok{GgmlType::Q8_0, bytes.data(), 64, 2, 68};
  EXPECT_TRUE(CheckWeight(ok).ok());
  WeightView v = ok;
  v.n_in = 48;
  EXPECT_EQ(CheckWeight(v).code(), StatusCode::kInvalidArgument);
  v = ok;
  v.row_bytes = 67;
  EXPECT_EQ(CheckWeight(v).code(), StatusCode::kInvalidArgument);
  v = ok;
  v.data = nullptr;
  EXPECT_EQ(CheckWeight(v).code(), StatusCode::kInvalidArgument);
  v = ok;
  v.type = GgmlType::Q8_K;  // a ggml type MatMul has no kernel for
  EXPECT_EQ(CheckWeight(v).code(), StatusCode::kUnimplemented);
  v = ok;
  v.n_out = 0;
  EXPECT_EQ(CheckWeight(v).code(), StatusCode::kInvalidArgument);
}

// Padded rows (row_bytes > RowBytes) are honoured.
TEST(MatMulTest, RowStride) {
  auto w = MakeWeight(GgmlType::Q4_0, 64, 3, 1);
  const size_t rb = w.view.row_bytes, padded = rb + 16;
  std::vector<uint8_t> bytes(padded * 3, 0xee);
  for (int o = 0; o < 3; ++o) std::memcpy(&bytes[o * padded], &w.bytes[o * rb], rb);
  WeightView v{GgmlType::Q4_0, bytes.data(), 64, 3, padded};
  const auto x = RandomFloats(64, 2);
  std::vector<float> a(3), b(3);
  MatMulReference(w.view, x.data(), 1, a.data());
  ThreadPool pool(1);
  MatMul(v, x.data(), 1, b.data(), pool);
  EXPECT_TRUE(BitwiseEqual(a, b));
}

}  // namespace
}  // namespace ember::kernels
