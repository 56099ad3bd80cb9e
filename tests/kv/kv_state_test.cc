#include "kv/kv_state.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "util/half.h"

namespace ember {
namespace {

KvConfig SmallConfig(KvDtype dtype = KvDtype::kF32) { return KvConfig::Uniform(2, 2, 4, 3, dtype, 4); }

// A deterministic value for (tag, layer, pos, element) so tests can tell writers apart.
float Val(int tag, int layer, int64_t pos, int64_t i) { return tag * 1000.0f + layer * 100.0f + pos + i * 0.125f; }

// Appends positions [n_pos, n_pos + n) with values tagged `tag`.
void Append(KvState& s, int64_t n, int tag) {
  ASSERT_TRUE(s.Reserve(n).ok());
  const KvConfig& c = s.config();
  std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
  for (int64_t p = s.n_pos(); p < s.n_pos() + n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) k[i] = Val(tag, l, p, i);
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) v[i] = -Val(tag, l, p, i);
      s.StoreK(l, p, k.data());
      s.StoreV(l, p, v.data());
    }
  }
  s.Commit(n);
}

float ReadK(const KvState& s, int layer, int64_t pos, int64_t i) {
  const KvConfig& c = s.config();
  const int h = static_cast<int>(i / c.head_dim_k);
  const uint8_t* head = s.KHead(layer, pos / c.block_size, h);
  const int64_t idx = (pos % c.block_size) * c.head_dim_k + i % c.head_dim_k;
  if (c.dtype == KvDtype::kF32) return reinterpret_cast<const float*>(head)[idx];
  return Fp16ToF32(reinterpret_cast<const uint16_t*>(head)[idx]);
}

float ReadV(const KvState& s, int layer, int64_t pos, int64_t i) {
  const KvConfig& c = s.config();
  const int h = static_cast<int>(i / c.head_dim_v);
  const uint8_t* head = s.VHead(layer, pos / c.block_size, h);
  const int64_t idx = (pos % c.block_size) * c.head_dim_v + i % c.head_dim_v;
  if (c.dtype == KvDtype::kF32) return reinterpret_cast<const float*>(head)[idx];
  return Fp16ToF32(reinterpret_cast<const uint16_t*>(head)[idx]);
}

// Checks that positions [from, to) hold the values written with `tag`.
void ExpectTagged(const KvState& s, int64_t from, int64_t to, int tag) {
  const KvConfig& c = s.config();
  // F16 states hold the fp16 rounding of what was stored.
  auto want = [&](float v) { return c.dtype == KvDtype::kF32 ? v : Fp16ToF32(F32ToFp16(v)); };
  for (int64_t p = from; p < to; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) ASSERT_EQ(ReadK(s, l, p, i), want(Val(tag, l, p, i))) << p;
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) ASSERT_EQ(ReadV(s, l, p, i), want(-Val(tag, l, p, i))) << p;
    }
  }
}

uint64_t Checksum(const KvState& s) {
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : sink.bytes()) h = (h ^ b) * 1099511628211ull;
  return h;
}

TEST(KvStateTest, RejectsBadGeometryAndKinds) {
  KvConfig c = SmallConfig();
  c.block_size = 0;
  EXPECT_EQ(KvState::Create(c).status().code(), StatusCode::kInvalidArgument);
  c = SmallConfig();
  c.kinds = {LayerStateSpec{}, LayerStateSpec{StateKind::kWindow, 128}};
  EXPECT_TRUE(KvState::Create(c).ok());  // window layers are implemented (kv_window_test.cc)
  c.kinds = {LayerStateSpec{}, LayerStateSpec{StateKind::kWindow, 0}};
  auto st = KvState::Create(c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("window"), std::string::npos);
  c.kinds = {LayerStateSpec{StateKind::kRecurrent, 0}, LayerStateSpec{}};  // no state_floats
  EXPECT_EQ(KvState::Create(c).status().code(), StatusCode::kInvalidArgument);
  c.kinds = {LayerStateSpec{StateKind::kRecurrent, 0, 8}, LayerStateSpec{}};
  EXPECT_TRUE(KvState::Create(c).ok());  // recurrent layers are implemented (kv_recurrent_test.cc)
  c.kinds = {LayerStateSpec{}};  // wrong count
  EXPECT_EQ(KvState::Create(c).status().code(), StatusCode::kInvalidArgument);
}

TEST(KvStateTest, AppendReadBackAndBytes) {
  auto s = KvState::Create(SmallConfig());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bytes(), 0u);
  Append(*s, 6, 1);
  EXPECT_EQ(s->n_pos(), 6);
  EXPECT_EQ(s->n_blocks(), 2u);
  // block bytes = layers * (kv_dim_k + kv_dim_v) * block_size * 4 = 2 * (8 + 6) * 4 * 4
  EXPECT_EQ(s->config().block_bytes(), 448u);
  EXPECT_EQ(s->bytes(), 2 * 448u);
  ExpectTagged(*s, 0, 6, 1);
  Append(*s, 3, 2);
  EXPECT_EQ(s->bytes(), 3 * 448u);
  ExpectTagged(*s, 0, 6, 1);
  ExpectTagged(*s, 6, 9, 2);
}

TEST(KvStateTest, F16StoresRoundedValues) {
  auto s = KvState::Create(SmallConfig(KvDtype::kF16));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->config().block_bytes(), 224u);
  Append(*s, 5, 3);
  ExpectTagged(*s, 0, 5, 3);
  EXPECT_NE(ReadK(*s, 1, 4, 3), Val(3, 1, 4, 3));  // 3104.375 is not exact in fp16: really rounded
}

TEST(KvStateTest, ViewSharesBlocksAndRefcounts) {
  auto donor = KvState::Create(SmallConfig());
  ASSERT_TRUE(donor.ok());
  Append(*donor, 10, 1);  // blocks: [0..4) [4..8) [8..10)
  EXPECT_EQ(donor->BlockUseCount(0), 1);
  {
    auto view = donor->View(6);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->n_pos(), 6);
    EXPECT_EQ(view->n_blocks(), 2u);
    EXPECT_EQ(donor->BlockUseCount(0), 2);
    EXPECT_EQ(donor->BlockUseCount(1), 2);
    EXPECT_EQ(donor->BlockUseCount(2), 1);
    ExpectTagged(*view, 0, 6, 1);
  }
  // The view let go: the donor is sole owner again.
  EXPECT_EQ(donor->BlockUseCount(0), 1);
  EXPECT_EQ(donor->BlockUseCount(1), 1);
  EXPECT_FALSE(donor->View(11).ok());
  EXPECT_FALSE(donor->View(-1).ok());
}

TEST(KvStateTest, BlocksOutliveTheDonor) {
  KvState view = [] {
    auto donor = KvState::Create(SmallConfig());
    Append(*donor, 7, 4);
    return std::move(donor->View(7).value());
  }();
  EXPECT_EQ(view.BlockUseCount(0), 1);
  ExpectTagged(view, 0, 7, 4);
}

TEST(KvStateTest, CopyOnWriteOfSharedTailNeverChangesDonor) {
  auto donor = KvState::Create(SmallConfig());
  Append(*donor, 10, 1);
  const uint64_t before = Checksum(*donor);
  auto view = donor->View(6);  // tail block [4..8) is shared and partial for the view
  ASSERT_TRUE(view.ok());
  Append(*view, 5, 2);  // overwrites positions 6, 7 of the shared block -> must copy it
  EXPECT_EQ(Checksum(*donor), before);
  ExpectTagged(*donor, 0, 10, 1);
  ExpectTagged(*view, 0, 6, 1);
  ExpectTagged(*view, 6, 11, 2);
  EXPECT_EQ(view->BlockUseCount(0), 2);  // the untouched full block is still shared
  EXPECT_EQ(view->BlockUseCount(1), 1);  // the tail was copied
  // The donor appending after the view also copies (the view's bytes are protected the same way).
  auto view2 = donor->View(9);
  const uint64_t v2 = Checksum(*view2);
  Append(*donor, 2, 3);
  EXPECT_EQ(Checksum(*view2), v2);
}

TEST(KvStateTest, ConcurrentViewsExtendedDifferently) {
  auto donor = KvState::Create(SmallConfig(KvDtype::kF16));
  Append(*donor, 30, 1);
  const uint64_t before = Checksum(*donor);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        const int64_t p = 3 + (t * 7 + rep) % 25;  // various partial tails
        auto view = donor->View(p);
        if (!view.ok()) return;
        Append(*view, 9, 10 + t);
        ExpectTagged(*view, 0, p, 1);
        ExpectTagged(*view, p, p + 9, 10 + t);
      }
      ok[t] = 1;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1);
  EXPECT_EQ(Checksum(*donor), before);
  for (size_t i = 0; i < donor->n_blocks(); ++i) EXPECT_EQ(donor->BlockUseCount(i), 1);
}

TEST(KvStateTest, TrimReleasesBlocksAndReappends) {
  auto s = KvState::Create(SmallConfig());
  Append(*s, 10, 1);
  EXPECT_TRUE(s->CanTrimTo(0));
  EXPECT_TRUE(s->CanTrimTo(10));
  EXPECT_FALSE(s->CanTrimTo(11));
  EXPECT_EQ(s->min_reusable_offset(), 0);
  EXPECT_FALSE(s->TrimTo(12).ok());
  EXPECT_EQ(s->n_pos(), 10);
  ASSERT_TRUE(s->TrimTo(5).ok());
  EXPECT_EQ(s->n_pos(), 5);
  EXPECT_EQ(s->n_blocks(), 2u);
  EXPECT_EQ(s->bytes(), 2 * s->config().block_bytes());
  ASSERT_TRUE(s->TrimTo(4).ok());
  EXPECT_EQ(s->n_blocks(), 1u);
  Append(*s, 3, 2);
  ExpectTagged(*s, 0, 4, 1);
  ExpectTagged(*s, 4, 7, 2);
  ASSERT_TRUE(s->TrimTo(0).ok());
  EXPECT_EQ(s->bytes(), 0u);
}

TEST(KvStateTest, ForEachBlockLetsCallersCountSharedBytesOnce) {
  auto donor = KvState::Create(SmallConfig());
  Append(*donor, 8, 1);
  auto view = donor->View(8);
  std::vector<const void*> a, b;
  donor->ForEachBlock([&](const void* id, size_t) { a.push_back(id); });
  view->ForEachBlock([&](const void* id, size_t) { b.push_back(id); });
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 2u);
}

TEST(KvStateTest, SerializeRoundTripAndEqualBytesForEqualContents) {
  for (KvDtype dt : {KvDtype::kF32, KvDtype::kF16}) {
    auto s = KvState::Create(SmallConfig(dt));
    Append(*s, 11, 5);
    VectorSink sink;
    ASSERT_TRUE(s->Serialize(sink).ok());
    SpanSource src(sink.bytes().data(), sink.bytes().size());
    auto back = KvState::Deserialize(SmallConfig(dt), src);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(src.remaining(), 0u);
    EXPECT_EQ(back->n_pos(), 11);
    ExpectTagged(*back, 0, 11, 5);
    // Trimmed state with stale bytes in its tail serializes like a fresh one with the same contents.
    auto fresh = KvState::Create(SmallConfig(dt));
    Append(*fresh, 6, 5);
    ASSERT_TRUE(s->TrimTo(6).ok());
    EXPECT_EQ(Checksum(*s), Checksum(*fresh));
  }
}

TEST(KvStateTest, DeserializeRejectsMismatchAndTruncation) {
  auto s = KvState::Create(SmallConfig());
  Append(*s, 5, 1);
  VectorSink sink;
  ASSERT_TRUE(s->Serialize(sink).ok());
  const auto& bytes = sink.bytes();
  KvConfig other = SmallConfig();
  other.head_dim_v = 5;
  SpanSource src1(bytes.data(), bytes.size());
  auto st = KvState::Deserialize(other, src1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("head_dim_v"), std::string::npos);
  SpanSource src2(bytes.data(), bytes.size() - 3);
  EXPECT_EQ(KvState::Deserialize(SmallConfig(), src2).status().code(), StatusCode::kCorrupt);
  std::vector<uint8_t> bad = bytes;
  bad[0] ^= 0xff;
  SpanSource src3(bad.data(), bad.size());
  EXPECT_EQ(KvState::Deserialize(SmallConfig(), src3).status().code(), StatusCode::kCorrupt);
  SpanSource src4(bytes.data(), bytes.size());
  EXPECT_EQ(KvState::Deserialize(SmallConfig(KvDtype::kF16), src4).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember
