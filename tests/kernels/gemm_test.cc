// The multi-row GEMM kernels (gemm_kernels.h) against the scalar reference, bitwise: called directly
// for every tile size and through MatMul for every token count and thread count. Covers every type
// that has a GEMM kernel on this CPU (the list is taken from Avx2GemmFn, so new kernels are picked up).
#include "kernels/gemm_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/act_quant.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_builds.h"
#include "kernels/kernel_test_util.h"
#include "kernels/matmul.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

using testing::BitwiseEqual;
using testing::kAllTypes;
using testing::MakeWeight;
using testing::RandomFloats;

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }


std::vector<GgmlType> TypesWithGemm() {
  std::vector<GgmlType> out;
  for (GgmlType t : kAllTypes) {
    if (Avx2GemmFn(t) != nullptr) out.push_back(t);
  }
  return out;
}

// Byte offsets of a block's fp16 scales (everything else in a block is quant bits, any pattern legal).
std::vector<int> Fp16Offsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {208};
    default: return {0};
  }
}

// Weight rows of three kinds, chosen per row: quantized normals (realistic), random bytes (every quant
// value, Q8_0's -128 included, with random finite scales, some zero), and all bits set (the largest
// 4/5-bit quants in every block, the int16 bound of the kernels). Rows are `row_bytes` apart, which
// may exceed the packed size (a strided view).
std::vector<uint8_t> MakeRows(GgmlType type, int64_t n_in, int64_t n_rows, size_t row_bytes, uint32_t seed) {
  const size_t packed = RowBytes(type, static_cast<uint64_t>(n_in));
  const size_t bb = TypeInfo(type).block_bytes;
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(n_rows), 0xA5);
  const testing::TestWeight q = MakeWeight(type, n_in, n_rows, seed);
  std::mt19937 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  for (int64_t r = 0; r < n_rows; ++r) {
    uint8_t* row = bytes.data() + r * row_bytes;
    const int kind = static_cast<int>(r % 3);
    if (kind == 0) {
      std::memcpy(row, q.bytes.data() + r * packed, packed);
      continue;
    }
    for (size_t i = 0; i < packed; ++i) row[i] = kind == 1 ? static_cast<uint8_t>(rng()) : 0xFF;
    for (size_t b = 0; b < packed; b += bb) {
      for (int off : Fp16Offsets(type)) {
        const float v = rng() % 11 == 0 ? 0.0f : scale(rng);
        const uint16_t h = F32ToFp16(kind == 2 ? 1.0f : v);
        std::memcpy(row + b + off, &h, 2);
      }
    }
  }
  return bytes;
}

// Activation rows with the shapes that stress the kernels: normals, +-1 everywhere (q = +-127 in
// every block), signs flipping per block, zero blocks, a single spike per block, tiny values (fp16
// subnormal scales) and large ones.
std::vector<float> MakeActs(int64_t n_in, int64_t n_tok, uint32_t seed) {
  std::vector<float> x = RandomFloats(static_cast<size_t>(n_in * n_tok), seed, 1.5f);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* r = x.data() + t * n_in;
    for (int64_t i = 0; i < n_in; ++i) {
      switch (t % 8) {
        case 1: r[i] = 1.0f; break;
        case 2: r[i] = -1.0f; break;
        case 3: r[i] = (i / 32) % 2 ? 1.0f : -1.0f; break;
        case 4: if ((i / 32) % 3 == 0) r[i] = 0.0f; break;
        case 5: r[i] = i % 32 == 5 ? 100.0f : 0.0f; break;
        case 6: r[i] *= 1e-6f; break;
        case 7: r[i] *= 300.0f; break;
        default: break;
      }
    }
  }
  return x;
}

std::vector<int64_t> InputSizes(GgmlType type) {
  if (TypeInfo(type).block_elems == 256) return {256, 512, 1536, 4096 + 256};
  return {32, 64, 224, 256, 288, 1536, 4096 + 32};
}

// Every n_acts in 1..16, every tile start (so each token is seen at several tile positions), an odd
// output stride: each (row, token) bitwise equal to the scalar reference, nothing else written.
TEST(GemmTest, KernelMatchesReferenceBitwise) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2+FMA+F16C: MatMul uses the row kernels alone";
  const std::vector<GgmlType> types = TypesWithGemm();
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                     GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    EXPECT_NE(Avx2GemmFn(t), nullptr) << GgmlTypeName(t);
  }
  for (const testing::GemmBuild& build : testing::GemmBuilds()) {
  for (GgmlType type : types) {
    const GemmFn gemm = build.fn(type);
    ASSERT_NE(gemm, nullptr) << build.name << " " << GgmlTypeName(type);
    const DotFn ref = ReferenceDotFn(type);
    for (int64_t n_in : InputSizes(type)) {
      SCOPED_TRACE(std::string(build.name) + " " + GgmlTypeName(type) + " n_in=" + std::to_string(n_in));
      const size_t row_bytes = RowBytes(type, static_cast<uint64_t>(n_in)) + (n_in % 64 == 32 ? 6 : 0);
      const std::vector<uint8_t> rows = MakeRows(type, n_in, kGemmRows, row_bytes, static_cast<uint32_t>(n_in));
      constexpr int kTok = 24;
      const std::vector<float> x = MakeActs(n_in, kTok, static_cast<uint32_t>(n_in) + 3);
      ActBatch acts;
      acts.Convert(DotTypeOf(type), x.data(), kTok, n_in);
      std::vector<ActRow> act_rows(kTok);
      for (int t = 0; t < kTok; ++t) act_rows[t] = acts.Row(t);
      std::vector<float> want(kGemmRows * kTok);
      for (int t = 0; t < kTok; ++t) {
        for (int r = 0; r < kGemmRows; ++r) ref(rows.data() + r * row_bytes, n_in, &act_rows[t], 1, &want[t * kGemmRows + r], 1);
      }
      constexpr int64_t kStride = kGemmRows + 3;
      const float sentinel = -12345.5f;
      for (int n = 1; n <= kGemmMaxTile; ++n) {
        for (int start = 0; start + n <= kTok; start += (n % 4) + 3) {
          std::vector<float> out(static_cast<size_t>(kStride * n), sentinel);
          gemm(rows.data(), row_bytes, n_in, &act_rows[start], n, out.data(), kStride);
          for (int t = 0; t < n; ++t) {
            for (int r = 0; r < kStride; ++r) {
              const float got = out[t * kStride + r];
              if (r >= kGemmRows) {
                ASSERT_TRUE(SameBits(got, sentinel)) << "wrote past row 8: n=" << n << " t=" << t << " r=" << r;
              } else {
                ASSERT_TRUE(SameBits(got, want[(start + t) * kGemmRows + r]))
                    << "n_acts=" << n << " token=" << start + t << " row=" << r << " got " << got << " want "
                    << want[(start + t) * kGemmRows + r];
              }
            }
          }
        }
      }
    }
  }
  }
  EXPECT_GE(types.size(), 5u);
}

// Through MatMul (which mixes GEMM calls for whole groups of 8 rows with row kernels for the rest):
// every n_tok in 1..40 and 1..3 threads, bitwise the reference and each token computed alone; with
// the VNNI build (where the CPU has it) and with the AVX2 one.
TEST(GemmTest, MatMulUsingGemmIsBatchInvariant) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2+FMA+F16C: MatMul uses the row kernels alone";
  ThreadPool one(1), two(2), three(3);
  const std::vector<ThreadPool*> pools = {&two, &one, &three};
  for (bool vnni : {true, false}) {
  SetGemmVnniEnabled(vnni);
  SCOPED_TRACE(vnni ? "vnni allowed" : "avx2 gemm");
  for (GgmlType type : TypesWithGemm()) {
    const int64_t n_in = TypeInfo(type).block_elems == 256 ? 512 : 288;
    for (int64_t n_out : {5, 8, 13, 37, 67, 300}) {  // 300: several GEMM row blocks
      SCOPED_TRACE(std::string(GgmlTypeName(type)) + " n_out=" + std::to_string(n_out));
      const size_t row_bytes = RowBytes(type, static_cast<uint64_t>(n_in));
      const std::vector<uint8_t> bytes = MakeRows(type, n_in, n_out, row_bytes, static_cast<uint32_t>(n_out));
      const WeightView w{type, bytes.data(), n_in, n_out, row_bytes};
      constexpr int64_t kMaxTok = 40;
      const std::vector<float> x = MakeActs(n_in, kMaxTok, static_cast<uint32_t>(n_out) + 9);
      std::vector<float> ref(static_cast<size_t>(n_out * kMaxTok));
      MatMulReference(w, x.data(), kMaxTok, ref.data());
      std::vector<int64_t> counts;
      for (int64_t n_tok = 1; n_tok <= kMaxTok; ++n_tok) counts.push_back(n_tok);
      ASSERT_NO_FATAL_FAILURE(testing::ExpectMatMulInvariant(w, x, ref, counts, pools));
    }
  }
  }
  SetGemmVnniEnabled(true);
}

// A weight tall enough that one thread's rows span several GEMM row blocks (MatMul's cache blocking):
// still bitwise the reference.
TEST(GemmTest, TallWeightSpansRowBlocks) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2+FMA+F16C: MatMul uses the row kernels alone";
  ThreadPool one(1), two(2);
  for (GgmlType type : TypesWithGemm()) {
    SCOPED_TRACE(GgmlTypeName(type));
    const int64_t n_in = TypeInfo(type).block_elems == 256 ? 256 : 64, n_out = 2100 + 5, n_tok = 19;
    const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
    const std::vector<uint8_t> bytes = MakeRows(type, n_in, n_out, rb, 5);
    const WeightView w{type, bytes.data(), n_in, n_out, rb};
    const std::vector<float> x = MakeActs(n_in, n_tok, 6);
    std::vector<float> ref(static_cast<size_t>(n_out * n_tok)), got(ref.size());
    MatMulReference(w, x.data(), n_tok, ref.data());
    for (ThreadPool* pool : {&one, &two}) {
      MatMul(w, x.data(), n_tok, got.data(), *pool);
      EXPECT_TRUE(BitwiseEqual(got, ref)) << "threads=" << pool->size();
    }
  }
}

// MatMulShared (q/k/v-like weights reading one x, their row ranges cut at boundaries that are not
// multiples of 8) with the GEMM kernels on and off: the same bits.
TEST(GemmTest, SharedMatMulSameWithGemmOff) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2+FMA+F16C: MatMul uses the row kernels alone";
  ThreadPool two(2);
  const int64_t n_in = 256, n_tok = 37;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightView> views;
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0};
  const int64_t outs[] = {45, 21, 99};
  for (int i = 0; i < 3; ++i) {
    const size_t rb = RowBytes(types[i], n_in);
    bytes.push_back(MakeRows(types[i], n_in, outs[i], rb, 70 + i));
    views.push_back(WeightView{types[i], bytes.back().data(), n_in, outs[i], rb});
  }
  const std::vector<float> x = MakeActs(n_in, n_tok, 77);
  std::vector<float> on[3], off[3];
  for (bool gemm : {true, false}) {
    SetGemmEnabled(gemm);
    MatMulOut mo[3];
    for (int i = 0; i < 3; ++i) {
      auto& y = gemm ? on[i] : off[i];
      y.assign(static_cast<size_t>(outs[i] * n_tok), 0.0f);
      mo[i] = {&views[i], y.data()};
    }
    MatMulShared(mo, 3, x.data(), n_tok, two);
  }
  SetGemmEnabled(true);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(BitwiseEqual(on[i], off[i])) << GgmlTypeName(types[i]);
}

}  // namespace
}  // namespace ember::kernels
