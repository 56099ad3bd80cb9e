// The packed weight layout (repack.h), the block-major activation tiles (gemm_tile.h) and the packed
// GEMM kernels (gemm_packed.h, every build in gemm_builds.h) against the scalar reference, bitwise:
// packing is a byte permutation, each kernel call equals the reference for random and extreme blocks,
// every tile size, odd strides and row pitches; MatMul with packed weights equals the reference and each
// token alone for every token and thread count, with tails of unpacked rows and mixed MatMulShared calls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_packed.h"
#include "kernels/gemm_tile.h"
#include "kernels/kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/gemm_builds.h"
#include "kernels/packed_weights.h"
#include "kernels/repack.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

using testing::BitwiseEqual;

constexpr GgmlType kPackedTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

bool K(GgmlType t) { return TypeInfo(t).block_elems == 256; }

// How weight blocks and activations are filled.
enum class Fill {
  kQuantized,  // weights quantized from normals, activations random int8
  kRandom,     // random bytes (every quant and packed-scale pattern) with random finite fp16 scales
  kMax,        // all quant and scale bits set (largest quants, 6-bit scales and mins), -128 activations
  kMaxPos,     // as kMax with +127 activations (Q6_K: the largest int8 scales)
  kMixed,      // random rows and all-max rows, activations alternating -128 / +127
  kZero,       // all-zero weights
};

const char* FillName(Fill f) {
  switch (f) {
    case Fill::kQuantized: return "quantized";
    case Fill::kRandom: return "random";
    case Fill::kMax: return "max";
    case Fill::kMaxPos: return "maxpos";
    case Fill::kMixed: return "mixed";
    default: return "zero";
  }
}

// Offsets of a block's fp16 scales.
std::vector<int> HalfOffsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {208};
    default: return {0};
  }
}

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = F32ToFp16(v);
  std::memcpy(p, &h, 2);
}

// n_rows rows of n_in elements, `pitch` bytes apart (>= RowBytes; the gap is filled with junk).
std::vector<uint8_t> MakeRows(GgmlType type, Fill fill, int64_t n_in, int64_t n_rows, size_t pitch, uint32_t seed) {
  const size_t packed = RowBytes(type, static_cast<uint64_t>(n_in)), bb = TypeInfo(type).block_bytes;
  std::vector<uint8_t> out(pitch * static_cast<size_t>(n_rows), 0xA5);
  const testing::TestWeight q = testing::MakeWeight(type, n_in, n_rows, seed);
  std::mt19937 rng(seed * 5 + 1);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  for (int64_t r = 0; r < n_rows; ++r) {
    uint8_t* row = out.data() + r * pitch;
    const bool max_row = fill == Fill::kMax || fill == Fill::kMaxPos || (fill == Fill::kMixed && r % 3 == 1);
    if (fill == Fill::kQuantized) {
      std::memcpy(row, q.bytes.data() + r * packed, packed);
    } else if (fill == Fill::kZero) {
      std::memset(row, 0, packed);
    } else if (max_row) {
      std::memset(row, 0xFF, packed);
      for (size_t b = 0; b < packed; b += bb) {
        if (type == GgmlType::Q6_K) std::memset(row + b + 192, fill == Fill::kMaxPos ? 0x7F : 0x80, 16);
        for (int off : HalfOffsets(type)) PutHalf(row + b + off, off == 0 || type == GgmlType::Q6_K ? 1.5f : 0.75f);
      }
    } else {
      for (size_t i = 0; i < packed; ++i) row[i] = static_cast<uint8_t>(rng());
      for (size_t b = 0; b < packed; b += bb) {
        for (int off : HalfOffsets(type)) PutHalf(row + b + off, rng() % 9 == 0 ? 0.0f : scale(rng));
      }
    }
  }
  return out;
}

// The kernels' activations for a fill: arbitrary int8 (-128 included) with consistent sums.
testing::QuantActs MakeActs(GgmlType type, Fill fill, int64_t n_in, int n_tok, uint32_t seed) {
  const testing::QuantPattern p = fill == Fill::kMax      ? testing::QuantPattern::kAllMin
                                  : fill == Fill::kMaxPos ? testing::QuantPattern::kAllMax
                                  : fill == Fill::kMixed  ? testing::QuantPattern::kAlternating
                                                          : testing::QuantPattern::kRandom;
  return testing::MakeQuantActs(TypeInfo(type).block_elems, K(type) ? 16 : 32, p, n_in, n_tok, seed);
}

std::vector<int64_t> InputSizes(GgmlType type) {
  if (K(type)) return {256, 512, 1536, 256 * 11};
  return {32, 64, 224, 256, 288, 1536, 4096 + 32};
}

// ---- layout ------------------------------------------------------------------------------------

TEST(Repack, LayoutTypesAndSizes) {
  for (GgmlType t : kPackedTypes) {
    EXPECT_TRUE(HasPackedLayout(t)) << GgmlTypeName(t);
    EXPECT_EQ(PackedGroupBlockBytes(t), 16u * TypeInfo(t).block_bytes);
  }
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    EXPECT_FALSE(HasPackedLayout(t)) << GgmlTypeName(t);
  }
  const WeightView w{GgmlType::Q4_0, nullptr, 64, 37, 36};
  EXPECT_EQ(PackedGroups(w), 2);
  EXPECT_EQ(PackedBytes(w), 32u * 36u);
  const WeightView f{GgmlType::F16, nullptr, 64, 37, 128};
  EXPECT_EQ(PackedGroups(f), 0);
  EXPECT_EQ(PackedBytes(f), 0u);
}

// Packing moves bytes and nothing else: every packed row unpacks to its source row, for rows `pitch`
// apart, and the packed group block holds the documented fields at the documented places.
TEST(Repack, UnpackRestoresEveryRow) {
  for (GgmlType type : kPackedTypes) {
    for (int64_t n_in : {InputSizes(type)[0], InputSizes(type)[2]}) {
      const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
      const size_t pitch = rb + 5;
      const int64_t n_out = 16 * 3 + 7;
      const std::vector<uint8_t> rows = MakeRows(type, Fill::kRandom, n_in, n_out, pitch, 9);
      const WeightView w{type, rows.data(), n_in, n_out, pitch};
      std::vector<uint8_t> packed(PackedBytes(w) + 1, 0x5A);
      PackGroups(w, 0, 2, packed.data());
      PackGroups(w, 2, 3, packed.data());
      EXPECT_EQ(packed.back(), 0x5A) << "wrote past the copy";
      std::vector<uint8_t> back(rb);
      for (int64_t r = 0; r < 48; ++r) {
        UnpackRow(w, packed.data(), r, back.data());
        ASSERT_EQ(std::memcmp(back.data(), rows.data() + r * pitch, rb), 0) << GgmlTypeName(type) << " row " << r;
      }
      // Spot checks of the documented order: row 5's first scale at byte 10 of group block 0, and
      // word 1 of its first quant field at 64 bytes past that field's start.
      const uint8_t* row5 = rows.data() + 5 * pitch;
      const int d_off = type == GgmlType::Q6_K ? 208 : 0;
      EXPECT_EQ(std::memcmp(packed.data() + 10, row5 + d_off, 2), 0) << GgmlTypeName(type);
      const bool k45 = type == GgmlType::Q4_K || type == GgmlType::Q5_K;
      const size_t qfield = k45 ? 64 : 32;  // Q4_K / Q5_K: the scales after d and dmin; Q6_K: its scales
      const int q_src = k45 ? 4 : type == GgmlType::Q6_K ? 192 : 2;
      EXPECT_EQ(std::memcmp(packed.data() + qfield + 64 + 20, row5 + q_src + 4, 4), 0) << GgmlTypeName(type);
    }
  }
}

// PackedWeights packs exactly the views MatMul would read packed (types with a kernel on this CPU and
// at least one whole group) into 64-byte-aligned copies.
TEST(PackedWeightsTest, PacksOnlyWhatMatMulReads) {
  ThreadPool pool(2);
  const testing::TestWeight a = testing::MakeWeight(GgmlType::Q4_0, 64, 40, 1);
  const testing::TestWeight b = testing::MakeWeight(GgmlType::Q5_0, 64, 40, 2);
  const testing::TestWeight c = testing::MakeWeight(GgmlType::Q6_K, 256, 15, 3);  // no whole group
  const testing::TestWeight d = testing::MakeWeight(GgmlType::Q4_K, 256, 33, 4);
  WeightView va = a.view, vb = b.view, vc = c.view, vd = d.view;
  WeightView* views[] = {&va, &vb, &vc, &vd};
  StatusOr<PackedWeights> p = PackedWeights::Pack(views, pool);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(vb.packed, nullptr);
  EXPECT_EQ(vc.packed, nullptr);
  const bool avail = PackedKernelAvailable(GgmlType::Q4_0);
  EXPECT_EQ(avail, PackedKernelAvailable(GgmlType::Q4_K));
  EXPECT_EQ(va.packed != nullptr, avail);
  EXPECT_EQ(vd.packed != nullptr, avail);
  EXPECT_EQ(p->tensors(), avail ? 2 : 0);
  EXPECT_EQ(p->bytes(), avail ? PackedBytes(va) + PackedBytes(vd) : 0u);
  if (!avail) return;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(va.packed) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(vd.packed) % 64, 0u);
  std::vector<uint8_t> row(va.row_bytes);
  for (int64_t r = 0; r < 32; ++r) {
    UnpackRow(va, va.packed, r, row.data());
    ASSERT_EQ(std::memcmp(row.data(), va.data + r * va.row_bytes, va.row_bytes), 0) << r;
  }
}

// ---- kernels -----------------------------------------------------------------------------------

// Every n_acts in 1..16, one and two groups per call (the second group's rows differ from the first's),
// an odd output stride: each (row, token) bitwise the scalar reference's result on the original rows,
// nothing outside the 16 groups x n_acts outputs written.
void ExpectKernelMatches(const testing::PackedBuild& build, GgmlType type, Fill fill, int64_t n_in, uint32_t seed) {
  SCOPED_TRACE(std::string(build.name) + " " + GgmlTypeName(type) + " " + FillName(fill) + " n_in=" +
               std::to_string(n_in));
  const PackedGemmFn fn = build.fn(type);
  ASSERT_NE(fn, nullptr);
  const DotFn ref = ReferenceDotFn(type);
  const size_t pitch = RowBytes(type, static_cast<uint64_t>(n_in)) + 3;
  constexpr int kRows = kPackedMaxGroups * kPackRows;
  const std::vector<uint8_t> rows = MakeRows(type, fill, n_in, kRows, pitch, seed);
  const WeightView w{type, rows.data(), n_in, kRows, pitch};
  std::vector<uint8_t> packed(PackedBytes(w));
  PackGroups(w, 0, kPackedMaxGroups, packed.data());
  const size_t group_bytes = packed.size() / kPackedMaxGroups;
  const testing::QuantActs a = MakeActs(type, fill, n_in, kGemmMaxTile, seed + 1);
  GemmTiles tiles;
  tiles.Resize(DotTypeOf(type), kGemmMaxTile, n_in);
  tiles.Build(0, a.rows.data());
  const GemmTile tile = tiles.Tile(0);
  constexpr int64_t kStride = kRows + 3;
  const float kSentinel = -12345.5f;
  for (int groups = 1; groups <= kPackedMaxGroups; ++groups) {
    for (int n = 1; n <= kGemmMaxTile; ++n) {
      std::vector<float> got(static_cast<size_t>(kStride * kGemmMaxTile), kSentinel), want(got.size(), kSentinel);
      fn(packed.data(), group_bytes, groups, n_in, tile, n, got.data(), kStride);
      for (int r = 0; r < groups * kPackRows; ++r) {
        ref(rows.data() + r * pitch, n_in, a.rows.data(), n, want.data() + r, kStride);
      }
      ASSERT_TRUE(BitwiseEqual(got, want)) << "groups=" << groups << " n_acts=" << n << " got[0]=" << got[0]
                                           << " want[0]=" << want[0];
    }
  }
}

class PackedKernelTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(PackedKernelTest, QuantizedAndRandomBlocksBitwiseEqualReference) {
  uint32_t seed = 10;
  for (const testing::PackedBuild& build : testing::PackedBuilds()) {
    for (int64_t n_in : InputSizes(GetParam())) {
      for (Fill fill : {Fill::kQuantized, Fill::kRandom}) ExpectKernelMatches(build, GetParam(), fill, n_in, seed++);
    }
  }
}

TEST_P(PackedKernelTest, ExtremeBlocksBitwiseEqualReference) {
  uint32_t seed = 50;
  for (const testing::PackedBuild& build : testing::PackedBuilds()) {
    for (Fill fill : {Fill::kMax, Fill::kMaxPos, Fill::kMixed, Fill::kZero}) {
      for (int64_t n_in : {InputSizes(GetParam())[0], InputSizes(GetParam())[3]}) {
        ExpectKernelMatches(build, GetParam(), fill, n_in, seed++);
      }
    }
  }
}

// The extremes really are extremes: all-max weights against -128 activations give the exact product
// (no integer step saturates or wraps).
TEST_P(PackedKernelTest, MaxBlocksGiveTheExactProduct) {
  const GgmlType type = GetParam();
  const int64_t n_in = K(type) ? 256 : 32;
  const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
  const std::vector<uint8_t> rows = MakeRows(type, Fill::kMax, n_in, kPackRows, rb, 1);
  const WeightView w{type, rows.data(), n_in, kPackRows, rb};
  std::vector<uint8_t> packed(PackedBytes(w));
  PackGroups(w, 0, 1, packed.data());
  const testing::QuantActs a = MakeActs(type, Fill::kMax, n_in, 1, 2);
  GemmTiles tiles;
  tiles.Resize(DotTypeOf(type), 1, n_in);
  tiles.Build(0, a.rows.data());
  // Per element: Q8_0 w = -1 (0xFF), Q4_0 q - 8 = 7, Q4_K 15 * 63 - min 63 (dmin 0.75), Q5_K the same
  // with 31, Q6_K (63 - 32) * scale -128 (0x80); times x = -128 and the scales.
  const double dy = a.d[0];
  double want = 0;
  switch (type) {
    case GgmlType::Q8_0: want = -1.0 * -128 * 32 * 1.5 * dy; break;
    case GgmlType::Q4_0: want = 7.0 * -128 * 32 * 1.5 * dy; break;
    case GgmlType::Q4_K: want = (15.0 * 63 * 1.5 - 63 * 0.75) * -128 * 256 * dy; break;
    case GgmlType::Q5_K: want = (31.0 * 63 * 1.5 - 63 * 0.75) * -128 * 256 * dy; break;
    default: want = 31.0 * -128 * -128 * 256 * 1.5 * dy; break;
  }
  for (const testing::PackedBuild& build : testing::PackedBuilds()) {
    float got[kPackRows];
    build.fn(type)(packed.data(), packed.size(), 1, n_in, tiles.Tile(0), 1, got, kPackRows);
    for (int r = 0; r < kPackRows; ++r) EXPECT_NEAR(got[r], want, 1e-5 * std::fabs(want)) << build.name << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedKernelTest, ::testing::ValuesIn(kPackedTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& i) { return std::string(GgmlTypeName(i.param)); });

// ---- MatMul ------------------------------------------------------------------------------------

// Activations as MatMul gets them (floats), with the shapes that stress quantization.
std::vector<float> MakeFloats(int64_t n_in, int64_t n_tok, uint32_t seed) {
  std::vector<float> x = testing::RandomFloats(static_cast<size_t>(n_in * n_tok), seed, 1.5f);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < n_in; ++i) {
      float& v = x[t * n_in + i];
      if (t % 5 == 1) v = (i / 32) % 2 ? 1.0f : -1.0f;
      if (t % 5 == 2) v *= 1e-6f;
      if (t % 5 == 3 && (i / 16) % 3 == 0) v = 0.0f;
    }
  }
  return x;
}

// MatMul with a packed copy (whole groups from the copy, the n_out % 16 tail from the rows): bitwise the
// reference and each token alone, for every n_tok in 1..40 (decode included) and 1..3 threads; and the
// same bits with the packed path switched off.
TEST(PackedMatMulTest, BitwiseReferenceAndBatchInvariant) {
  if (!PackedKernelAvailable(GgmlType::Q4_0)) GTEST_SKIP() << "no AVX-512 VNNI: MatMul never reads packed weights here";
  ThreadPool one(1), two(2), three(3);
  const std::vector<ThreadPool*> pools = {&two, &one, &three};
  for (GgmlType type : kPackedTypes) {
    const int64_t n_in = K(type) ? 512 : 288;
    for (int64_t n_out : {16, 21, 37, 64 + 13, 300}) {
      SCOPED_TRACE(std::string(GgmlTypeName(type)) + " n_out=" + std::to_string(n_out));
      const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
      const std::vector<uint8_t> rows = MakeRows(type, n_out % 2 ? Fill::kQuantized : Fill::kRandom, n_in, n_out, rb,
                                                 static_cast<uint32_t>(n_out));
      const WeightView plain{type, rows.data(), n_in, n_out, rb};
      WeightView w = plain;
      WeightView* views[] = {&w};
      StatusOr<PackedWeights> p = PackedWeights::Pack(views, two);
      ASSERT_TRUE(p.ok());
      ASSERT_NE(w.packed, nullptr);
      constexpr int64_t kMaxTok = 40;
      const std::vector<float> x = MakeFloats(n_in, kMaxTok, static_cast<uint32_t>(n_out) + 1);
      std::vector<float> ref(static_cast<size_t>(n_out * kMaxTok));
      MatMulReference(plain, x.data(), kMaxTok, ref.data());
      std::vector<int64_t> counts;
      for (int64_t n_tok = 1; n_tok <= kMaxTok; n_tok += n_tok < 18 ? 1 : 7) counts.push_back(n_tok);
      ASSERT_NO_FATAL_FAILURE(testing::ExpectMatMulInvariant(w, x, ref, counts, pools));
      SetPackedGemmEnabled(false);
      std::vector<float> off(ref.size());
      MatMul(w, x.data(), kMaxTok, off.data(), three);
      SetPackedGemmEnabled(true);
      EXPECT_TRUE(BitwiseEqual(off, ref));
    }
  }
}

// MatMulShared over weights some packed and some not, their row ranges cut at boundaries that are not
// multiples of 16 (so threads' chunks start mid-group): the same bits as each weight alone, unpacked.
TEST(PackedMatMulTest, SharedMixesPackedAndUnpacked) {
  if (!PackedKernelAvailable(GgmlType::Q8_0)) GTEST_SKIP() << "no AVX-512 VNNI: MatMul never reads packed weights here";
  ThreadPool two(2), three(3);
  const int64_t n_in = 256, n_tok = 37;
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_0};
  const int64_t outs[] = {45, 21, 99, 70};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightView> plain, views;
  for (int i = 0; i < 4; ++i) {
    const size_t rb = RowBytes(types[i], n_in);
    bytes.push_back(MakeRows(types[i], Fill::kRandom, n_in, outs[i], rb, 70 + i));
    plain.push_back(WeightView{types[i], bytes.back().data(), n_in, outs[i], rb});
  }
  views = plain;
  WeightView* to_pack[] = {&views[0], &views[2], &views[3]};  // views[1] stays unpacked
  StatusOr<PackedWeights> p = PackedWeights::Pack(to_pack, two);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tensors(), 2);  // Q5_0 has no packed layout
  const std::vector<float> x = MakeFloats(n_in, n_tok, 77);
  for (ThreadPool* pool : {&two, &three}) {
    std::vector<float> got[4];
    MatMulOut mo[4];
    for (int i = 0; i < 4; ++i) {
      got[i].assign(static_cast<size_t>(outs[i] * n_tok), 0.0f);
      mo[i] = {&views[i], got[i].data()};
    }
    MatMulShared(mo, 4, x.data(), n_tok, *pool);
    for (int i = 0; i < 4; ++i) {
      std::vector<float> want(got[i].size());
      MatMulReference(plain[i], x.data(), n_tok, want.data());
      EXPECT_TRUE(BitwiseEqual(got[i], want)) << i << " threads=" << pool->size();
    }
  }
}

}  // namespace
}  // namespace ember::kernels
