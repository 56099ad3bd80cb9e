// kernels::AttendHead (and its per-block pieces) against a straightforward reference that walks the
// same blocks key by key with the ops.h primitives — the attention of model/attention.cc before the
// per-block fusion. Every output must match bit for bit: F16 and F32 caches, several head dims
// (including ones that take the unvectorized fallbacks), block sizes, GQA ratios, windows on and off.
#include "kernels/attention_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/ops.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

using testing::RandomFloats;

// n_kv_head heads of blocks, each block [bs][hd] keys and [bs][hv] values, stored separately as in
// the block-structured KV state.
struct TestKv {
  int hd = 0, hv = 0;
  int64_t bs = 0;
  bool f16 = true;
  // blocks[kvh][b][0 = K, 1 = V]: bytes
  std::vector<std::vector<std::vector<uint8_t>>> k, v;
};

struct HeadCtx {
  const TestKv* kv;
  int kvh;
};

const uint8_t* Block(const void* ctx, bool v, int64_t b) {
  const HeadCtx& c = *static_cast<const HeadCtx*>(ctx);
  return (v ? c.kv->v : c.kv->k)[static_cast<size_t>(c.kvh)][static_cast<size_t>(b)].data();
}

std::vector<uint8_t> RandomRows(bool f16, int64_t rows, int dim, uint32_t seed, float scale) {
  const std::vector<float> f = RandomFloats(static_cast<size_t>(rows * dim), seed, scale);
  std::vector<uint8_t> out(f.size() * (f16 ? 2 : 4));
  if (f16) {
    std::vector<uint16_t> h(f.size());
    RoundToF16(f.data(), h.data(), static_cast<int>(f.size()));
    std::memcpy(out.data(), h.data(), out.size());
  } else {
    std::memcpy(out.data(), f.data(), out.size());
  }
  return out;
}

TestKv MakeKv(bool f16, int hd, int hv, int64_t bs, int n_kv_head, int64_t n_pos, uint32_t seed) {
  TestKv kv;
  kv.hd = hd;
  kv.hv = hv;
  kv.bs = bs;
  kv.f16 = f16;
  const int64_t nb = (n_pos + bs - 1) / bs;
  kv.k.resize(static_cast<size_t>(n_kv_head));
  kv.v.resize(static_cast<size_t>(n_kv_head));
  for (int h = 0; h < n_kv_head; ++h) {
    for (int64_t b = 0; b < nb; ++b) {
      kv.k[h].push_back(RandomRows(f16, bs, hd, seed++, 1.0f));
      kv.v[h].push_back(RandomRows(f16, bs, hv, seed++, 1.0f));
    }
  }
  return kv;
}

// The AttnKvHead of one test kv head.
AttnKvHead MakeHead(const TestKv& kv, const HeadCtx* ctx) {
  AttnKvHead head;
  head.head_dim_k = kv.hd;
  head.head_dim_v = kv.hv;
  head.block_size = kv.bs;
  head.f16 = kv.f16;
  head.ctx = ctx;
  head.block = Block;
  return head;
}

// The pre-fusion attention: per key DotF16F16(k, q16) / DotF32, Softmax, RoundToF16(p), then per key
// AxpyF16(Fp16ToF32(p16[j]), v) / AxpyF32(p[j], v).
void ReferenceHead(const AttnKvHead& kv, const float* q, int64_t k0, int64_t n_keys, float scale, float* out) {
  const int hd = kv.head_dim_k, hv = kv.head_dim_v;
  const int64_t bs = kv.block_size, n = n_keys - k0;
  std::vector<float> scores(static_cast<size_t>(n));
  std::vector<uint16_t> q16(static_cast<size_t>(hd)), p16(static_cast<size_t>(n));
  if (kv.f16) RoundToF16(q, q16.data(), hd);
  for (int64_t pos = k0; pos < n_keys; ++pos) {
    const uint8_t* kh = kv.block(kv.ctx, false, pos / bs);
    const int64_t j = pos % bs;
    const float dot = kv.f16 ? DotF16F16(reinterpret_cast<const uint16_t*>(kh) + j * hd, q16.data(), hd)
                             : DotF32(reinterpret_cast<const float*>(kh) + j * hd, q, hd);
    scores[static_cast<size_t>(pos - k0)] = dot * scale;
  }
  Softmax(scores.data(), static_cast<int>(n));
  if (kv.f16) RoundToF16(scores.data(), p16.data(), static_cast<int>(n));
  std::fill(out, out + hv, 0.0f);
  for (int64_t pos = k0; pos < n_keys; ++pos) {
    const uint8_t* vh = kv.block(kv.ctx, true, pos / bs);
    const int64_t j = pos % bs, i = pos - k0;
    if (kv.f16) {
      AxpyF16(Fp16ToF32(p16[static_cast<size_t>(i)]), reinterpret_cast<const uint16_t*>(vh) + j * hv, out, hv);
    } else {
      AxpyF32(scores[static_cast<size_t>(i)], reinterpret_cast<const float*>(vh) + j * hv, out, hv);
    }
  }
}

struct Case {
  bool f16;
  int hd, hv;
  int64_t bs;
  int n_head, n_kv_head;  // GQA ratio n_head / n_kv_head
  int64_t window;         // 0: full attention
  float q_scale;          // larger: peakier softmax
};

std::string Name(const Case& c) {
  return std::string(c.f16 ? "F16" : "F32") + " hd=" + std::to_string(c.hd) + " hv=" + std::to_string(c.hv) +
         " bs=" + std::to_string(c.bs) + " heads=" + std::to_string(c.n_head) + "/" +
         std::to_string(c.n_kv_head) + " window=" + std::to_string(c.window) +
         " qscale=" + std::to_string(c.q_scale);
}

void RunCase(const Case& c, int64_t n_pos, uint32_t seed) {
  SCOPED_TRACE(Name(c));
  const TestKv kv = MakeKv(c.f16, c.hd, c.hv, c.bs, c.n_kv_head, n_pos, seed);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  const int group = c.n_head / c.n_kv_head;
  std::vector<float> scores(static_cast<size_t>(n_pos));
  std::vector<uint16_t> half(static_cast<size_t>(n_pos + c.hd));
  std::vector<float> out(static_cast<size_t>(c.hv)), ref(static_cast<size_t>(c.hv));
  int checked = 0;
  for (int64_t p = 0; p < n_pos; p += (p < 70 ? 1 : 7)) {
    const std::vector<float> q =
        RandomFloats(static_cast<size_t>(c.n_head * c.hd), seed + 1000 + static_cast<uint32_t>(p), c.q_scale);
    const int64_t k0 = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1) : 0;
    for (int h = 0; h < c.n_head; ++h) {
      const HeadCtx ctx{&kv, h / group};
      const AttnKvHead head = MakeHead(kv, &ctx);
      const float* qh = q.data() + h * c.hd;
      std::fill(out.begin(), out.end(), 12345.0f);  // AttendHead must overwrite, not accumulate
      AttendHead(head, qh, k0, p + 1, scale, scores.data(), half.data(), out.data());
      ReferenceHead(head, qh, k0, p + 1, scale, ref.data());
      ASSERT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)))
          << "p=" << p << " head=" << h << " out[0]=" << out[0] << " ref[0]=" << ref[0];
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(AttentionHeadTest, MatchesPerKeyReferenceBitwise) {
  uint32_t seed = 1;
  for (bool f16 : {true, false}) {
    for (int hd : {64, 128}) {
      for (int64_t bs : {32, 16}) {
        for (auto [nh, nkv] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{8, 1}}) {
          for (int64_t window : {0, 50, 32}) {
            RunCase({f16, hd, hd, bs, nh, nkv, window, 1.0f}, 200, seed);
            seed += 7919;
          }
        }
      }
    }
  }
}

// Head dims and block sizes off the vector widths (fallbacks and partial column groups), a K/V width
// mismatch, and a peaky softmax whose probabilities underflow to 0.
TEST(AttentionHeadTest, OddShapesAndPeakySoftmaxBitwise) {
  uint32_t seed = 77;
  for (bool f16 : {true, false}) {
    for (auto [hd, hv] : {std::pair{80, 80}, std::pair{96, 96}, std::pair{256, 256}, std::pair{128, 64},
                          std::pair{64, 72}, std::pair{32, 36}, std::pair{160, 200}}) {
      for (int64_t bs : {32, 7, 1}) {
        for (int64_t window : {0, 13}) {
          RunCase({f16, hd, hv, bs, 4, 2, window, 1.0f}, 90, seed);
          seed += 104729;
        }
      }
    }
    RunCase({f16, 128, 128, 32, 2, 1, 0, 40.0f}, 150, seed++);
    RunCase({f16, 64, 64, 32, 2, 1, 24, 40.0f}, 150, seed++);
  }
}

// AttendHeads over a tile (several consecutive positions x a GQA group, windows giving each query its
// own key range, an empty range) gives every query exactly its own AttendHead result. A lone query
// takes the unshared path (its own conversions, one query at a time); a tile widens F16 blocks once
// and accumulates V two queries at a time — this is the prefill == decode guarantee.
void RunTile(bool f16, int hd, int hv, int64_t bs, int group, int64_t window, int64_t tokens, uint32_t seed) {
  SCOPED_TRACE(std::string(f16 ? "F16" : "F32") + " hd=" + std::to_string(hd) + " hv=" + std::to_string(hv) +
               " bs=" + std::to_string(bs) + " group=" + std::to_string(group) +
               " window=" + std::to_string(window) + " tokens=" + std::to_string(tokens));
  const int64_t n_pos = 150;
  const TestKv kv = MakeKv(f16, hd, hv, bs, 1, n_pos, seed);
  const HeadCtx ctx{&kv, 0};
  const AttnKvHead head = MakeHead(kv, &ctx);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Tiles starting at a block's first row, mid-block, straddling block boundaries, and at the end.
  for (int64_t p0 : {int64_t{0}, int64_t{13}, bs - 2, 2 * bs - 1, int64_t{60}, n_pos - tokens}) {
    const int64_t t = std::min<int64_t>(tokens, n_pos - p0);
    const int nq = static_cast<int>(t) * group;
    const auto q = RandomFloats(static_cast<size_t>(nq * hd), seed + static_cast<uint32_t>(p0), 2.0f);
    std::vector<float> scores(static_cast<size_t>(nq * n_pos)), outs(static_cast<size_t>(nq * hv), 7.0f);
    std::vector<uint16_t> half(static_cast<size_t>(nq * (n_pos + hd)));
    std::vector<AttnQuery> qs(static_cast<size_t>(nq));
    for (int i = 0; i < nq; ++i) {
      const int64_t p = p0 + i / group;
      qs[i] = {q.data() + i * hd, window > 0 ? std::max<int64_t>(0, p - window + 1) : 0, p + 1,
               scores.data() + i * n_pos, half.data() + i * (n_pos + hd), outs.data() + i * hv};
    }
    const bool empty = p0 == n_pos - tokens && nq > 1;
    if (empty) qs[1].n_keys = qs[1].k0;  // an empty range: out must be zeros
    AttendHeads(head, qs.data(), nq, scale);
    for (int i = 0; i < nq; ++i) {
      std::vector<float> sc(static_cast<size_t>(n_pos)), one(static_cast<size_t>(hv), -3.0f);
      std::vector<uint16_t> hf(static_cast<size_t>(n_pos + hd));
      AttendHead(head, qs[i].q, qs[i].k0, qs[i].n_keys, scale, sc.data(), hf.data(), one.data());
      ASSERT_EQ(0, std::memcmp(one.data(), qs[i].out, hv * sizeof(float))) << "p0=" << p0 << " query " << i;
    }
    if (empty) {
      for (int j = 0; j < hv; ++j) ASSERT_EQ(qs[1].out[j], 0.0f);
    }
  }
}

TEST(AttentionHeadTest, TiledQueriesEqualSingleQueries) {
  uint32_t seed = 501;
  for (bool f16 : {true, false}) {
    for (auto [hd, hv] : {std::pair{64, 64}, std::pair{128, 128}}) {
      for (int group : {1, 4, 8}) {
        for (int64_t window : {0, 20}) {
          for (int64_t tokens : {int64_t{1}, int64_t{5}, std::max<int64_t>(1, 16 / group)}) {
            RunTile(f16, hd, hv, 32, group, window, tokens, seed);
            seed += 31;
          }
        }
      }
    }
  }
}

// The tile sizes model/attention.cc uses (AttnTileTokens: ~48 queries) across the diagonal blocks,
// with the AVX-512 kernels on and off: every query equals its single-query result (which the tests
// above tie to the per-key reference), and the two tiers agree bitwise.
TEST(AttentionHeadTest, LargeTilesBothTiersBitwise) {
  uint32_t seed = 7007;
  for (bool f16 : {true, false}) {
    for (auto [hd, group] : {std::pair{128, 3}, std::pair{64, 4}, std::pair{128, 1}, std::pair{128, 8}}) {
      const int64_t tokens = AttnTileTokens(group, 150);
      ASSERT_GE(tokens * group, 24) << "tiles should hold dozens of queries";
      for (bool zmm : {true, false}) {
        SetAttentionAvx512Enabled(zmm);
        RunTile(f16, hd, hd, 32, group, 0, tokens, seed);
        RunTile(f16, hd, hd, 32, group, 40, tokens, seed + 1);
      }
      SetAttentionAvx512Enabled(true);
      seed += 13;
    }
  }
}

// The same tile through AttendHeads with the AVX-512 kernels on and off gives the same bits.
TEST(AttentionHeadTest, Avx512AndAvx2TilesAgreeBitwise) {
  for (bool f16 : {true, false}) {
    for (auto [hd, hv] : {std::pair{128, 128}, std::pair{64, 64}, std::pair{256, 256}, std::pair{96, 72},
                          std::pair{32, 40}, std::pair{80, 80}}) {
      const int group = 3;
      const int64_t n_pos = 200, bs = 32, p0 = 150, tokens = 16;
      SCOPED_TRACE(std::string(f16 ? "F16" : "F32") + " hd=" + std::to_string(hd) + " hv=" + std::to_string(hv));
      const TestKv kv = MakeKv(f16, hd, hv, bs, 1, n_pos, 4242);
      const HeadCtx ctx{&kv, 0};
      const AttnKvHead head = MakeHead(kv, &ctx);
      const int nq = static_cast<int>(tokens) * group;
      const auto q = RandomFloats(static_cast<size_t>(nq * hd), 99, 1.5f);
      std::vector<float> outs[2];
      for (int zmm = 0; zmm < 2; ++zmm) {
        SetAttentionAvx512Enabled(zmm == 1);
        std::vector<float> scores(static_cast<size_t>(nq * n_pos));
        std::vector<uint16_t> half(static_cast<size_t>(nq * hd));
        outs[zmm].assign(static_cast<size_t>(nq * hv), -1.0f);
        std::vector<AttnQuery> qs(static_cast<size_t>(nq));
        for (int i = 0; i < nq; ++i) {
          const int64_t p = p0 + i / group;
          qs[i] = {q.data() + i * hd, 0, p + 1, scores.data() + i * n_pos, half.data() + i * hd,
                   outs[zmm].data() + i * hv};
        }
        AttendHeads(head, qs.data(), nq, 1.0f / std::sqrt(static_cast<float>(hd)));
      }
      SetAttentionAvx512Enabled(true);
      EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)));
    }
  }
}

// Tiles on shapes that mix the shared and unshared paths: K rows too narrow for the AVX2 score kernel
// (no shared K widening) but V rows that take it, K/V width mismatches, odd block sizes.
TEST(AttentionHeadTest, TiledQueriesEqualSingleQueriesOddShapes) {
  uint32_t seed = 9001;
  for (bool f16 : {true, false}) {
    for (auto [hd, hv] : {std::pair{80, 80}, std::pair{128, 64}, std::pair{64, 72}, std::pair{36, 36},
                          std::pair{16, 16}, std::pair{256, 256}}) {
      for (int64_t bs : {16, 7}) {
        RunTile(f16, hd, hv, bs, 3, 0, 5, seed);
        RunTile(f16, hd, hv, bs, 2, 9, 4, seed + 1);
        seed += 17;
      }
    }
  }
}

// The per-block pieces split anywhere give the same bits as one call over all the keys.
TEST(AttentionHeadTest, BlockPiecesAreSplitInvariant) {
  for (bool f16 : {true, false}) {
    for (int hd : {64, 128, 96}) {
      const int64_t n = 75;
      const auto kf = RandomFloats(static_cast<size_t>(n * hd), 5);
      const auto q = RandomFloats(static_cast<size_t>(hd), 6);
      const auto p = RandomFloats(static_cast<size_t>(n), 7, 0.1f);
      std::vector<uint16_t> k16(kf.size()), q16(static_cast<size_t>(hd));
      std::vector<float> qf(static_cast<size_t>(hd));
      RoundToF16(kf.data(), k16.data(), static_cast<int>(kf.size()));
      AttnPrepareQueryF16(q.data(), hd, q16.data(), qf.data());
      std::vector<float> whole(static_cast<size_t>(n)), split(static_cast<size_t>(n));
      std::vector<float> ow(static_cast<size_t>(hd), 0.0f), os(static_cast<size_t>(hd), 0.0f);
      auto scores = [&](int64_t a, int64_t b, float* sc) {
        if (f16) {
          AttnScoresF16(k16.data() + a * hd, q16.data(), qf.data(), hd, b - a, 0.125f, sc + a);
        } else {
          AttnScoresF32(kf.data() + a * hd, q.data(), hd, b - a, 0.125f, sc + a);
        }
      };
      auto accum = [&](int64_t a, int64_t b, float* o) {
        if (f16) {
          AttnAccumF16(p.data() + a, k16.data() + a * hd, hd, b - a, o);
        } else {
          AttnAccumF32(p.data() + a, kf.data() + a * hd, hd, b - a, o);
        }
      };
      scores(0, n, whole.data());
      accum(0, n, ow.data());
      for (int64_t a = 0, step = 1; a < n; a += step, step = step % 5 + 1) {
        const int64_t b = std::min(n, a + step);
        scores(a, b, split.data());
        accum(a, b, os.data());
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float))) << f16 << " " << hd;
      EXPECT_EQ(0, std::memcmp(ow.data(), os.data(), ow.size() * sizeof(float))) << f16 << " " << hd;
      // and key by key with the ops.h primitives
      std::vector<float> o1(static_cast<size_t>(hd), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float d = f16 ? DotF16F16(k16.data() + j * hd, q16.data(), hd) : DotF32(kf.data() + j * hd, q.data(), hd);
        const float e = d * 0.125f;
        EXPECT_EQ(0, std::memcmp(&whole[static_cast<size_t>(j)], &e, sizeof(float))) << j;
        if (f16) {
          AxpyF16(p[static_cast<size_t>(j)], k16.data() + j * hd, o1.data(), hd);
        } else {
          AxpyF32(p[static_cast<size_t>(j)], kf.data() + j * hd, o1.data(), hd);
        }
      }
      EXPECT_EQ(0, std::memcmp(ow.data(), o1.data(), ow.size() * sizeof(float))) << f16 << " " << hd;
    }
  }
}

}  // namespace
}  // namespace ember::kernels
