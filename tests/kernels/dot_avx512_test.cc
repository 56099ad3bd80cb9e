// The AVX-512 row-dot kernels against the scalar reference, bitwise.
//
// The kernel sources (src/kernels/dot_avx512_*.inc) are compiled a second time here with SIMDe
// standing in for the AVX-512 intrinsics, so their exact logic runs on CPUs without AVX-512; the
// native build is checked too where the CPU has the features, and must be unavailable otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/avx2_util.h"
#include "kernels/dot_kernels.h"
#include "kernels/kquant_scales.h"
#include "kernels/kernel_test_util.h"
#include "util/half.h"

// After <immintrin.h> (via avx2_util.h): SIMDe keeps the native types and AVX2 intrinsics, and
// aliases the _mm512_* names this CPU lacks to its portable implementations.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#define EMBER_AVX512
namespace ember::kernels::avx512_emulated {
#include "kernels/dot_avx512_float.inc"
#include "kernels/dot_avx512_q32.inc"
#include "kernels/dot_avx512_kquants.inc"
}  // namespace ember::kernels::avx512_emulated

namespace ember::kernels {
namespace {

using testing::MakeWeight;
using testing::RandomFloats;

constexpr GgmlType kQ32Types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1};
constexpr GgmlType kFloatTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};
// Numbers of 32-element blocks: partial and whole groups of 8 around the kernels' boundaries.
constexpr int64_t kBlockCounts[] = {1, 3, 7, 8, 9, 15, 16, 17, 33, 100};
constexpr int64_t kTokens = 5;

DotFn EmulatedDotFn(GgmlType type) {
  if (DotFn f = avx512_emulated::FloatDotFn(type)) return f;
  if (DotFn f = avx512_emulated::KQuantDotFn(type)) return f;
  return avx512_emulated::Block32DotFn(type);
}

std::string Hex(float f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", F2Bits(f));
  return buf;
}

// Weight rows and activations for one check; `bytes` holds n_out rows of RowBytes(type, n_in).
struct Case {
  Case(GgmlType t, int64_t n, int64_t rows) : type(t), n_in(n), n_out(rows) {}
  GgmlType type;
  int64_t n_in, n_out;
  std::vector<uint8_t> bytes;
  ActBatch acts;  // kTokens rows converted to the type's dot type
  std::string what;
};

// Every row of c against the reference, for tiles of 1..4 tokens: consecutive tokens, tokens in
// another order (stride 2, wrapping) and one token repeated; each out[j * stride] must be bitwise
// the reference for the token in slot j, and the floats between those untouched.
void ExpectBitwiseReference(DotFn fn, const Case& c) {
  ASSERT_NE(fn, nullptr) << c.what;
  const DotFn ref = ReferenceDotFn(c.type);
  const size_t rb = RowBytes(c.type, static_cast<uint64_t>(c.n_in));
  for (int64_t o = 0; o < c.n_out; ++o) {
    const uint8_t* row = c.bytes.data() + o * rb;
    float want[kTokens];
    for (int64_t t = 0; t < kTokens; ++t) {
      const ActRow r = c.acts.Row(t);
      ref(row, c.n_in, &r, 1, &want[t], 1);
    }
    for (int n_acts = 1; n_acts <= kMaxTile; ++n_acts) {
      for (int layout = 0; layout < 3; ++layout) {
        for (int64_t start = 0; start < kTokens; ++start) {
          int64_t ids[kMaxTile];
          ActRow tile[kMaxTile];
          for (int j = 0; j < n_acts; ++j) {
            ids[j] = layout == 2 ? start : (start + j * (layout + 1)) % kTokens;
            tile[j] = c.acts.Row(ids[j]);
          }
          constexpr uint32_t kUntouched = 0x7fc0dead;  // a NaN no kernel computes
          const int64_t stride = layout == 0 ? 1 : 3;
          float out[kMaxTile * 3];
          for (float& f : out) f = Bits2F(kUntouched);
          fn(row, c.n_in, tile, n_acts, out, stride);
          for (int64_t i = 0; i < kMaxTile * 3; ++i) {
            if (i % stride != 0 || i / stride >= n_acts) {
              ASSERT_EQ(F2Bits(out[i]), kUntouched) << c.what << " i=" << i;
            }
          }
          for (int j = 0; j < n_acts; ++j) {
            ASSERT_EQ(F2Bits(out[j * stride]), F2Bits(want[ids[j]]))
                << c.what << " n_in=" << c.n_in << " row=" << o << " n_acts=" << n_acts << " slot=" << j
                << " token=" << ids[j] << ": got " << out[j * stride] << " (" << Hex(out[j * stride]) << ") want "
                << want[ids[j]] << " (" << Hex(want[ids[j]]) << ")";
          }
        }
      }
    }
  }
}

Case RandomCase(GgmlType type, int64_t n_in, uint32_t seed) {
  Case c{type, n_in, 3};
  c.bytes = MakeWeight(type, n_in, c.n_out, seed).bytes;
  const auto x = RandomFloats(static_cast<size_t>(n_in * kTokens), seed + 1, 2.0f);
  c.acts.Convert(DotTypeOf(type), x.data(), kTokens, n_in);
  c.what = std::string(GgmlTypeName(type)) + " random";
  return c;
}

// Row lengths for F32/F16/BF16: the block counts above plus tails that are not multiples of 32.
std::vector<int64_t> FloatLengths() {
  std::vector<int64_t> n;
  for (int64_t nb : kBlockCounts) n.push_back(nb * 32);
  for (int64_t extra : {1, 5, 16, 31, 33, 50, 17 * 32 + 7, 100 * 32 + 17}) n.push_back(extra);
  return n;
}

TEST(Avx512EmulatedTest, Block32TypesMatchReferenceBitwise) {
  for (GgmlType type : kQ32Types) {
    for (int64_t nb : kBlockCounts) {
      ExpectBitwiseReference(EmulatedDotFn(type), RandomCase(type, nb * 32, static_cast<uint32_t>(nb * 7 + static_cast<int>(type))));
    }
  }
}

TEST(Avx512EmulatedTest, FloatTypesMatchReferenceBitwise) {
  for (GgmlType type : kFloatTypes) {
    for (int64_t n_in : FloatLengths()) {
      ExpectBitwiseReference(EmulatedDotFn(type), RandomCase(type, n_in, static_cast<uint32_t>(n_in * 3 + static_cast<int>(type))));
    }
  }
}

// Subnormal weights and products: no path may flush them (which _mm512_dpbf16_ps would).
TEST(Avx512EmulatedTest, FloatTypesKeepSubnormals) {
  for (GgmlType type : kFloatTypes) {
    const int64_t n_in = 9 * 32 + 3;
    Case c{type, n_in, 2};
    const float tiny = type == GgmlType::F16 ? 1e-6f : 1e-39f;  // subnormal in the weight's format
    auto w = RandomFloats(static_cast<size_t>(n_in * c.n_out), 77, tiny);
    c.bytes.resize(RowBytes(type, static_cast<uint64_t>(n_in)) * c.n_out);
    for (int64_t o = 0; o < c.n_out; ++o) {
      ASSERT_TRUE(Quantize(type, w.data() + o * n_in, c.bytes.data() + o * RowBytes(type, n_in), n_in).ok());
    }
    const auto x = RandomFloats(static_cast<size_t>(n_in * kTokens), 78, 0.5f);
    c.acts.Convert(DotTypeOf(type), x.data(), kTokens, n_in);
    c.what = std::string(GgmlTypeName(type)) + " subnormal";
    ExpectBitwiseReference(EmulatedDotFn(type), c);
  }
}

// Hand-made blocks at the integer extremes: raw weight bytes (Q8_0 -128/127 everywhere, all nibbles
// and fifth bits set or clear, random bytes) against activations that quantize to +-127 everywhere.
struct BlockPattern {
  const char* name;
  uint8_t Byte(std::mt19937& rng, int j) const {
    const std::string n = name;
    if (n == "min") return 0x80;
    if (n == "max") return 0x7F;
    if (n == "alt") return j % 2 ? 0x80 : 0x7F;
    if (n == "ones") return 0xFF;
    if (n == "zeros") return 0x00;
    return static_cast<uint8_t>(rng());
  }
};

Case ExtremeCase(GgmlType type, int64_t nb, const BlockPattern& wp, int act_pattern, uint32_t seed) {
  const size_t bb = TypeInfo(type).block_bytes;
  Case c{type, nb * 32, 2};
  c.bytes.resize(RowBytes(type, static_cast<uint64_t>(c.n_in)) * c.n_out);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(0.25f, 2.0f);
  const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
  for (size_t b = 0; b < c.bytes.size(); b += bb) {
    uint8_t* p = &c.bytes[b];
    const uint16_t d = F32ToFp16(b % 3 == 0 ? 1.0f : scale(rng)), m = F32ToFp16(-scale(rng));
    std::memcpy(p, &d, 2);
    const size_t head = has_min ? 4 : 2;
    if (has_min) std::memcpy(p + 2, &m, 2);
    for (size_t j = head; j < bb; ++j) p[j] = wp.Byte(rng, static_cast<int>(j));
  }
  // Activations: every value +-1, so each 32-block quantizes to +-127 with d = fp16(1/127).
  std::vector<float> x(static_cast<size_t>(c.n_in * kTokens));
  for (size_t i = 0; i < x.size(); ++i) {
    switch (act_pattern) {
      case 0: x[i] = 1.0f; break;
      case 1: x[i] = -1.0f; break;
      case 2: x[i] = i % 2 ? -1.0f : 1.0f; break;
      default: x[i] = rng() % 2 ? -1.0f : 1.0f; break;
    }
  }
  c.acts.Convert(DotTypeOf(type), x.data(), kTokens, c.n_in);
  c.what = std::string(GgmlTypeName(type)) + " weights=" + wp.name + " acts=" + std::to_string(act_pattern);
  return c;
}

TEST(Avx512EmulatedTest, ExtremeBlocksMatchReferenceBitwise) {
  for (GgmlType type : kQ32Types) {
    const std::vector<BlockPattern> patterns =
        type == GgmlType::Q8_0 ? std::vector<BlockPattern>{{"min"}, {"max"}, {"alt"}, {"random"}}
                               : std::vector<BlockPattern>{{"ones"}, {"zeros"}, {"random"}};
    for (const BlockPattern& wp : patterns) {
      for (int act = 0; act < 4; ++act) {
        for (int64_t nb : {1, 9, 17}) {
          const Case c = ExtremeCase(type, nb, wp, act, static_cast<uint32_t>(nb * 13 + act));
          // The activations really are at the extreme.
          for (int64_t i = 0; i < c.n_in; ++i) ASSERT_EQ(std::abs(c.acts.Row(0).q[i]), 127);
          ExpectBitwiseReference(EmulatedDotFn(type), c);
        }
      }
    }
  }
}

// Q4_K and Q5_K have AVX-512 kernels; Q6_K does not (MatMul uses its AVX2 kernel).
constexpr GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K};

TEST(Avx512EmulatedTest, NoQ6KKernel) { EXPECT_EQ(EmulatedDotFn(GgmlType::Q6_K), nullptr); }

TEST(Avx512EmulatedTest, KQuantTypesMatchReferenceBitwise) {
  for (GgmlType type : kKTypes) {
    for (int64_t nsb : {1, 2, 6, 16}) {
      ExpectBitwiseReference(EmulatedDotFn(type), RandomCase(type, nsb * 256, static_cast<uint32_t>(nsb * 5 + static_cast<int>(type))));
    }
  }
}

// Raw K-quant super-blocks at the extremes (every quant, six-bit scale and min at its maximum; all
// zero; random bytes) against hand-made Q8_K activations, -128 and +127 included (beyond what
// quantization gives, so every int16 bound is exercised).
TEST(Avx512EmulatedTest, ExtremeKQuantBlocksMatchReferenceBitwise) {
  std::mt19937 rng(11);
  for (GgmlType type : kKTypes) {
    const uint32_t bb = TypeInfo(type).block_bytes;
    const int64_t nsb = 3, n_in = nsb * 256;
    for (int wp = 0; wp < 3; ++wp) {
      std::vector<uint8_t> row(bb * nsb);
      for (size_t i = 0; i < row.size(); ++i) {
        row[i] = wp == 0 ? 0xFF : wp == 1 ? 0x00 : static_cast<uint8_t>(rng());
      }
      for (int64_t b = 0; b < nsb; ++b) {  // fp16 scales: finite, both signs
        uint8_t* p = row.data() + b * bb;
        const uint16_t d = F32ToFp16(b % 2 ? -1.5f : 0.75f), dmin = F32ToFp16(0.5f);
        std::memcpy(p, &d, 2);
        std::memcpy(p + 2, &dmin, 2);
      }
      for (int ap = 0; ap < 4; ++ap) {
        std::vector<int8_t> q(static_cast<size_t>(n_in * kTokens));
        for (size_t i = 0; i < q.size(); ++i) {
          q[i] = static_cast<int8_t>(ap == 0 ? -128 : ap == 1 ? 127 : ap == 2 ? (i % 2 ? -128 : 127) : static_cast<int>(rng() % 256) - 128);
        }
        std::vector<float> d(static_cast<size_t>(nsb * kTokens));
        for (size_t i = 0; i < d.size(); ++i) d[i] = 0.01f * static_cast<float>(i + 1);
        std::vector<int32_t> sums(static_cast<size_t>(nsb * 16 * kTokens));
        for (size_t g = 0; g < sums.size(); ++g) {
          for (int i = 0; i < 16; ++i) sums[g] += q[g * 16 + i];
        }
        const DotFn fn = EmulatedDotFn(type), ref = ReferenceDotFn(type);
        ASSERT_NE(fn, nullptr);
        for (int n_acts = 1; n_acts <= kMaxTile; ++n_acts) {
          ActRow tile[kMaxTile];
          float got[kMaxTile], want[kMaxTile];
          for (int j = 0; j < n_acts; ++j) {
            tile[j].q = q.data() + j * n_in;
            tile[j].d = d.data() + j * nsb;
            tile[j].sum = sums.data() + j * nsb * 16;
            ref(row.data(), n_in, &tile[j], 1, &want[j], 1);
          }
          fn(row.data(), n_in, tile, n_acts, got, 1);
          for (int j = 0; j < n_acts; ++j) {
            ASSERT_EQ(F2Bits(got[j]), F2Bits(want[j])) << GgmlTypeName(type) << " weights=" << wp << " acts=" << ap
                                                       << " n_acts=" << n_acts << " slot=" << j << ": got " << got[j]
                                                       << " want " << want[j];
          }
        }
      }
    }
  }
}

// The native kernels: on a CPU with the features the same checks as above (fewer sizes), otherwise
// Avx512DotFn must decline every type so MatMul falls back to AVX2.
TEST(Avx512NativeTest, MatchesReferenceOrUnavailable) {
  const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vnni");
  for (GgmlType type : testing::kAllTypes) {
    if (!has || type == GgmlType::Q6_K) {
      EXPECT_EQ(Avx512DotFn(type), nullptr) << GgmlTypeName(type) << " has_avx512=" << has;
      continue;
    }
    const int64_t block = TypeInfo(type).block_elems;
    for (int64_t nb : {1, 9, 17, 100}) {
      ExpectBitwiseReference(Avx512DotFn(type), RandomCase(type, (block == 256 ? (nb + 7) / 8 : nb) * block, static_cast<uint32_t>(nb)));
      if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
        ExpectBitwiseReference(Avx512DotFn(type), RandomCase(type, nb * 32 + 7, static_cast<uint32_t>(nb)));
      }
    }
  }
  if (has) {
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q5_1}) {
      ExpectBitwiseReference(Avx512DotFn(type), ExtremeCase(type, 9, type == GgmlType::Q8_0 ? BlockPattern{"min"} : BlockPattern{"ones"}, 3, 5));
    }
  }
}

}  // namespace
}  // namespace ember::kernels
