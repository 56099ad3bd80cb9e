// The low-bit types' row-dot kernels (IQ4_NL, MXFP4, Q2_K, Q3_K, IQ4_XS) against the scalar reference,
// bitwise, for every tier this CPU runs plus the AVX-512 kernels under SIMDe (src/kernels/
// dot_avx512_lowbit.inc compiled a second time here, as tests/kernels/dot_avx512_test.cc does for the
// other .inc files), on quantized, random-byte and extreme blocks; the reference itself against
// hand-computed all-max products; MatMulShared mixing these types with others of the same dot type, and
// MatMulGrouped over experts of these types.
// (MatMul against MatMulReference and a float64 oracle for these types: matmul_test.cc, kAllTypes.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "format/quant_tables.h"
#include "kernels/act_quant.h"
#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_kernels.h"
#include "kernels/kernel_test_util.h"
#include "util/half.h"

// After <immintrin.h> (via avx2_util.h): SIMDe aliases the _mm512_* names this CPU may lack.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#define EMBER_AVX512
namespace ember::kernels::avx512_lowbit_emulated {
#include "kernels/dot_avx512_lowbit.inc"
}  // namespace ember::kernels::avx512_lowbit_emulated

namespace ember::kernels {
namespace {

using testing::MakeWeight;
using testing::RandomFloats;

constexpr GgmlType kLowBit[] = {GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS};
constexpr int64_t kTokens = 5;

bool IsGrid(GgmlType t) { return t == GgmlType::IQ4_NL || t == GgmlType::MXFP4 || t == GgmlType::IQ4_XS; }
int64_t BlockElems(GgmlType t) { return TypeInfo(t).block_elems; }

bool CpuHas(bool avx512) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (!avx512) return avx2;
  return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

// A kernel under test; `any_int8`: exact for every int8 activation, -128 included. The AVX2 grid
// kernels and the AVX-512 IQ4_XS one multiply signed by signed with the sign trick and need |x| <= 127,
// which is all ActBatch produces.
struct Kernel {
  std::string name;
  DotFn fn;
  bool any_int8;
};

std::vector<Kernel> KernelsFor(GgmlType t) {
  const bool avx512_exact = t != GgmlType::IQ4_XS;
  std::vector<Kernel> out = {{"avx512-simde", avx512_lowbit_emulated::lowbit::LowBitDotFn(t), avx512_exact}};
  if (CpuHas(false)) out.push_back({"avx2", Avx2DotFn(t), !IsGrid(t)});
  if (CpuHas(true)) out.push_back({"avx512", Avx512DotFn(t), avx512_exact});
  return out;
}

// Owned activations: either an ActBatch or hand-made quants (testing::QuantActs).
struct Acts {
  ActBatch batch;
  testing::QuantActs raw;
  bool use_raw = false;
  ActRow Row(int64_t t) const { return use_raw ? raw.rows[static_cast<size_t>(t)] : batch.Row(t); }
};

// Every row against the reference for tiles of 1..4 tokens in three token orders (consecutive, stride
// 2, one token repeated) and two output strides; nothing between the outputs may be written.
void ExpectBitwise(const Kernel& k, GgmlType type, const std::vector<uint8_t>& bytes, int64_t n_in, const Acts& acts,
                   const std::string& what) {
  ASSERT_NE(k.fn, nullptr) << k.name << " " << GgmlTypeName(type);
  const DotFn ref = ReferenceDotFn(type);
  const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
  for (size_t o = 0; o < bytes.size() / rb; ++o) {
    const uint8_t* row = bytes.data() + o * rb;
    float want[kTokens];
    for (int64_t t = 0; t < kTokens; ++t) {
      const ActRow r = acts.Row(t);
      ref(row, n_in, &r, 1, &want[t], 1);
    }
    for (int n_acts = 1; n_acts <= kMaxTile; ++n_acts) {
      for (int layout = 0; layout < 3; ++layout) {
        for (int64_t start = 0; start < kTokens; ++start) {
          int64_t ids[kMaxTile];
          ActRow tile[kMaxTile];
          for (int j = 0; j < n_acts; ++j) {
            ids[j] = layout == 2 ? start : (start + j * (layout + 1)) % kTokens;
            tile[j] = acts.Row(ids[j]);
          }
          constexpr uint32_t kUntouched = 0x7fc0dead;
          const int64_t stride = layout == 0 ? 1 : 3;
          float out[kMaxTile * 3];
          for (float& f : out) f = Bits2F(kUntouched);
          k.fn(row, n_in, tile, n_acts, out, stride);
          for (int64_t i = 0; i < kMaxTile * 3; ++i) {
            if (i % stride != 0 || i / stride >= n_acts) {
              ASSERT_EQ(F2Bits(out[i]), kUntouched) << k.name << " " << what;
            }
          }
          for (int j = 0; j < n_acts; ++j) {
            ASSERT_EQ(F2Bits(out[j * stride]), F2Bits(want[ids[j]]))
                << k.name << " " << what << " n_in=" << n_in << " row=" << o << " n_acts=" << n_acts << " token="
                << ids[j] << ": got " << out[j * stride] << " want " << want[ids[j]];
          }
        }
      }
    }
  }
}

// Byte offsets of a block's fp16 scales, and of MXFP4's E8M0 byte.
std::vector<int> HalfOffsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::MXFP4: return {};
    default: return {0};  // IQ4_NL, IQ4_XS
  }
}

// Weight rows of one kind: 0 quantized normals, 1 random bytes (every code, scale and high-bit pattern)
// with finite fp16 scales (MXFP4: E8M0 bytes 0..3 and 64..191), 2 every byte 0xFF (largest codes and
// sub-block scales), 3 every byte 0.
std::vector<uint8_t> MakeRows(GgmlType type, int64_t n_in, int64_t n_rows, int kind, uint32_t seed) {
  if (kind == 0) return MakeWeight(type, n_in, n_rows, seed).bytes;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  std::vector<uint8_t> bytes(RowBytes(type, static_cast<uint64_t>(n_in)) * n_rows, kind == 2 ? 0xFF : 0x00);
  if (kind == 1) for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const size_t bb = TypeInfo(type).block_bytes;
  for (size_t b = 0; b < bytes.size(); b += bb) {
    for (int off : HalfOffsets(type)) {
      const uint16_t h = F32ToFp16(kind == 1 ? scale(rng) : 1.0f);
      std::memcpy(&bytes[b + off], &h, 2);
    }
    if (type == GgmlType::MXFP4) {  // E8M0: the subnormal scales (e = 0, 1) and their neighbours too
      bytes[b] = static_cast<uint8_t>(kind != 1 ? 127 : rng() % 4 == 0 ? rng() % 4 : 64 + rng() % 128);
    }
  }
  return bytes;
}

// Activations of one kind: 0 normals, 1 all +1 (q = +127), 2 alternating -1/+1, 3 hand-made int8
// including -128 (only for kernels exact on every int8).
Acts MakeActs(GgmlType type, int64_t n_in, int kind, uint32_t seed) {
  Acts a;
  if (kind == 3) {
    const bool k = DotTypeOf(type) == DotType::kQ8_K;
    a.raw = testing::MakeQuantActs(k ? 256 : 32, k ? 16 : 32, testing::QuantPattern::kRandom, n_in, kTokens, seed);
    a.use_raw = true;
    return a;
  }
  std::vector<float> x = RandomFloats(static_cast<size_t>(n_in * kTokens), seed, 2.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    if (kind == 1) x[i] = 1.0f;
    if (kind == 2) x[i] = i % 2 ? 1.0f : -1.0f;
  }
  a.batch.Convert(DotTypeOf(type), x.data(), kTokens, n_in);
  return a;
}

TEST(DotLowBitTest, KernelsAvailableExactlyWhereTheCpuRunsThem) {
  for (GgmlType t : kLowBit) {
    EXPECT_NE(ReferenceDotFn(t), nullptr) << GgmlTypeName(t);
    EXPECT_NE(avx512_lowbit_emulated::lowbit::LowBitDotFn(t), nullptr) << GgmlTypeName(t);
    EXPECT_EQ(Avx2DotFn(t) != nullptr, CpuHas(false)) << GgmlTypeName(t);
    EXPECT_EQ(Avx512DotFn(t) != nullptr, CpuHas(true)) << GgmlTypeName(t);
  }
}

// Every kernel == the reference bitwise: block counts around the 8-block groups of the 32-element
// kernels (1, 7, 8, 9, 17 blocks) and 1..3 super-blocks, every weight and activation kind.
TEST(DotLowBitTest, EveryTierMatchesReferenceBitwise) {
  for (GgmlType type : kLowBit) {
    const std::vector<int64_t> blocks = BlockElems(type) == 32 ? std::vector<int64_t>{1, 7, 8, 9, 17}
                                                               : std::vector<int64_t>{1, 2, 3};
    for (int64_t nb : blocks) {
      const int64_t n_in = nb * BlockElems(type);
      for (int wk = 0; wk < 4; ++wk) {
        const std::vector<uint8_t> rows = MakeRows(type, n_in, 3, wk, static_cast<uint32_t>(nb * 11 + wk));
        for (int ak = 0; ak < 4; ++ak) {
          const Acts acts = MakeActs(type, n_in, ak, static_cast<uint32_t>(nb * 13 + ak));
          const std::string what = std::string(GgmlTypeName(type)) + " weights=" + std::to_string(wk) +
                                   " acts=" + std::to_string(ak);
          for (const Kernel& k : KernelsFor(type)) {
            if (ak == 3 && !k.any_int8) continue;
            ASSERT_NO_FATAL_FAILURE(ExpectBitwise(k, type, rows, n_in, acts, what));
          }
        }
      }
    }
  }
}

// The reference on all-max blocks against activations of +1 (each Q8 block: q = 127, d = 1/127 up
// to its rounding): the dot is the per-element value times n, computed from the format definitions.
TEST(DotLowBitTest, ReferenceAllMaxBlocksGiveTheExactProduct) {
  // Per-element value of an all-0xFF block with fp16 scales 1.0 (MXFP4: e = 128, scale 1):
  const std::pair<GgmlType, double> cases[] = {
      {GgmlType::IQ4_NL, 113.0},         // index 15
      {GgmlType::MXFP4, -12.0},          // FP4 code 15 = -6.0, times 2^(128 - 127)
      {GgmlType::Q2_K, 15.0 * 3 - 15},   // scale 15, q 3, min 15
      {GgmlType::Q3_K, 31.0 * 3},        // scale 63 - 32, q 7 - 4
      {GgmlType::IQ4_XS, 31.0 * 113}};   // scale 63 - 32, index 15
  for (const auto& [type, value] : cases) {
    const int64_t n_in = 4 * 256;
    std::vector<uint8_t> rows = MakeRows(type, n_in, 1, 2, 1);
    if (type == GgmlType::MXFP4) {
      for (size_t b = 0; b < rows.size(); b += 17) rows[b] = 128;
    }
    const std::vector<float> x(n_in, 1.0f);
    float y = 0;
    MatMulReference(WeightView{type, rows.data(), n_in, 1, rows.size()}, x.data(), 1, &y);
    EXPECT_NEAR(y, value * n_in, 1e-3 * std::fabs(value) * n_in) << GgmlTypeName(type);
  }
}

// MatMulShared with the new types beside others of the same dot type (one activation conversion) and of
// another (the fallback), odd row counts: bitwise each weight's own MatMul.
TEST(DotLowBitTest, SharedEqualsSeparateCalls) {
  const std::vector<std::vector<GgmlType>> sets = {{GgmlType::IQ4_NL, GgmlType::Q8_0, GgmlType::MXFP4},
                                                   {GgmlType::Q2_K, GgmlType::Q4_K, GgmlType::Q3_K, GgmlType::IQ4_XS},
                                                   {GgmlType::MXFP4, GgmlType::Q3_K}};
  ThreadPool two(2), three(3);
  for (const auto& types : sets) {
    const int64_t n_in = 512;
    std::vector<testing::TestWeight> ws;
    for (size_t i = 0; i < types.size(); ++i) {
      ws.push_back(MakeWeight(types[i], n_in, 11 + 6 * static_cast<int64_t>(i), static_cast<uint32_t>(50 + i)));
    }
    for (int64_t n_tok : {1, 5, 19}) {
      const auto x = RandomFloats(static_cast<size_t>(n_in * n_tok), static_cast<uint32_t>(51 + n_tok));
      for (ThreadPool* pool : {&two, &three}) {
        std::vector<std::vector<float>> shared(ws.size()), separate(ws.size());
        std::vector<MatMulOut> outs;
        for (size_t i = 0; i < ws.size(); ++i) {
          shared[i].assign(static_cast<size_t>(ws[i].view.n_out * n_tok), -1.0f);
          separate[i].assign(shared[i].size(), -2.0f);
          MatMulReference(ws[i].view, x.data(), n_tok, separate[i].data());
          outs.push_back({&ws[i].view, shared[i].data()});
        }
        MatMulShared(outs.data(), static_cast<int>(outs.size()), x.data(), n_tok, *pool);
        for (size_t i = 0; i < ws.size(); ++i) {
          EXPECT_TRUE(testing::BitwiseEqual(shared[i], separate[i])) << GgmlTypeName(types[i]) << " n_tok=" << n_tok;
        }
      }
    }
  }
}

// MatMulGrouped over experts of these types (MXFP4 is what MoE checkpoints ship): each group's rows
// bitwise its own MatMulReference, whether the experts share a dot type (one conversion) or not.
TEST(DotLowBitTest, GroupedEqualsReferencePerGroup) {
  const int64_t n_in = 256, n_rows = 23;
  const std::vector<std::vector<GgmlType>> sets = {{GgmlType::MXFP4, GgmlType::MXFP4, GgmlType::MXFP4},
                                                   {GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K},
                                                   {GgmlType::MXFP4, GgmlType::IQ4_XS}};
  const auto x = RandomFloats(static_cast<size_t>(n_in * n_rows), 61);
  ThreadPool two(2);
  for (const auto& types : sets) {
    std::vector<testing::TestWeight> ws;
    std::vector<MatMulGroup> groups;
    std::vector<std::vector<float>> ys(types.size()), want(types.size());
    int64_t t0 = 0;
    for (size_t i = 0; i < types.size(); ++i) {
      ws.push_back(MakeWeight(types[i], n_in, 9 + 4 * static_cast<int64_t>(i), static_cast<uint32_t>(70 + i)));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const int64_t n_tok = i == 0 ? 1 : 2 + 5 * static_cast<int64_t>(i);  // a decode-sized group and larger ones
      ys[i].assign(static_cast<size_t>(n_tok * ws[i].view.n_out), -1.0f);
      want[i].assign(ys[i].size(), -2.0f);
      MatMulReference(ws[i].view, x.data() + t0 * n_in, n_tok, want[i].data());
      groups.push_back({&ws[i].view, t0, n_tok, ys[i].data()});
      t0 += n_tok;
    }
    ASSERT_LE(t0, n_rows);
    MatMulGrouped(groups.data(), static_cast<int>(groups.size()), x.data(), n_rows, two);
    for (size_t i = 0; i < types.size(); ++i) {
      EXPECT_TRUE(testing::BitwiseEqual(ys[i], want[i])) << GgmlTypeName(types[i]) << " group " << i;
    }
  }
}

// GEMM kernels (gemm_q32.inc, checked in gemm_test.cc) for the 32-element types only, and no packed
// kernels: MatMul serves the rest with the row kernels, and a packed copy would never be read.
TEST(DotLowBitTest, GemmOnlyFor32ElementTypesNoPacked) {
  for (GgmlType t : kLowBit) {
    const bool gemm = t == GgmlType::IQ4_NL || t == GgmlType::MXFP4;
    EXPECT_EQ(Avx2GemmFn(t) != nullptr, gemm && CpuHasAvx2()) << GgmlTypeName(t);
    EXPECT_EQ(VnniGemmFn(t) != nullptr, gemm && CpuHasAvx512()) << GgmlTypeName(t);
    EXPECT_FALSE(PackedKernelAvailable(t)) << GgmlTypeName(t);
  }
}

}  // namespace
}  // namespace ember::kernels
