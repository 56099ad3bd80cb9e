// Window layers (StateKind::kWindow) in KvState: bounded memory, the exact trim rule of spec §3.2,
// copy-on-write views, and serialization (format version 2; all-full states keep version 1).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kv/kv_format.h"
#include "kv/kv_state.h"

namespace ember {
namespace {

constexpr int kWindow = 8;
constexpr int kMargin = 4;
constexpr int kBlock = 4;

// Layers 0 and 2 are window layers, layer 1 full attention (the gemma3 shape in miniature).
KvConfig WindowConfig(KvDtype dtype = KvDtype::kF32) {
  KvConfig c = KvConfig::Uniform(3, 2, 4, 2, dtype, kBlock);
  c.window_margin = kMargin;
  c.kinds = {LayerStateSpec{StateKind::kWindow, kWindow}, LayerStateSpec{}, LayerStateSpec{StateKind::kWindow, kWindow}};
  return c;
}

float Val(int tag, int layer, int64_t pos, int64_t i) { return tag * 1000.0f + layer * 100.0f + pos + i * 0.25f; }

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
  const uint8_t* head = s.KHead(layer, pos / c.block_size, static_cast<int>(i / c.head_dim_k));
  return reinterpret_cast<const float*>(head)[(pos % c.block_size) * c.head_dim_k + i % c.head_dim_k];
}

float ReadV(const KvState& s, int layer, int64_t pos, int64_t i) {
  const KvConfig& c = s.config();
  const uint8_t* head = s.VHead(layer, pos / c.block_size, static_cast<int>(i / c.head_dim_v));
  return reinterpret_cast<const float*>(head)[(pos % c.block_size) * c.head_dim_v + i % c.head_dim_v];
}

// Every position each layer still holds carries `tag`'s values in [from, to) (window layers: from their
// held_from on).
void ExpectHeld(const KvState& s, int64_t from, int64_t to, int tag) {
  const KvConfig& c = s.config();
  for (int l = 0; l < c.n_layer; ++l) {
    for (int64_t p = std::max(from, s.held_from(l)); p < to; ++p) {
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) ASSERT_EQ(ReadK(s, l, p, i), Val(tag, l, p, i)) << l << " " << p;
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) ASSERT_EQ(ReadV(s, l, p, i), -Val(tag, l, p, i)) << l << " " << p;
    }
  }
}

std::vector<uint8_t> Bytes(const KvState& s) {
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  return sink.bytes();
}

int64_t ExpectedHeldFrom(int64_t n_pos) {
  return std::max<int64_t>(0, n_pos - kWindow - kMargin) / kBlock * kBlock;
}

TEST(KvWindowTest, WindowLayersReleaseBlocksAndStayBounded) {
  auto s = KvState::Create(WindowConfig());
  ASSERT_TRUE(s.ok());
  const size_t pos_bytes = s->config().layer_position_bytes();
  for (int step = 0; step < 60; ++step) {
    Append(*s, 1, 1);
    const int64_t n = s->n_pos();
    EXPECT_EQ(s->held_from(0), ExpectedHeldFrom(n)) << n;
    EXPECT_EQ(s->held_from(2), ExpectedHeldFrom(n)) << n;
    EXPECT_EQ(s->held_from(1), 0);
    // Window group (2 layers): at most W + margin + one partial block at each end.
    EXPECT_LE(s->group_bytes(0), 2 * pos_bytes * (kWindow + kMargin + 2 * kBlock)) << n;
    // Full group grows with the sequence.
    EXPECT_EQ(s->group_bytes(1), pos_bytes * static_cast<size_t>((n + kBlock - 1) / kBlock * kBlock));
  }
  EXPECT_EQ(s->held_from(0), 48);
  EXPECT_LT(s->group_bytes(0), s->group_bytes(1) / 2);  // 2 window layers hold far less than 1 full one
  EXPECT_EQ(s->bytes(), s->group_bytes(0) + s->group_bytes(1));
  ExpectHeld(*s, 0, 60, 1);
}

TEST(KvWindowTest, ChunkingDoesNotChangeTheState) {
  auto a = KvState::Create(WindowConfig());
  auto b = KvState::Create(WindowConfig());
  for (int i = 0; i < 45; ++i) Append(*a, 1, 2);
  Append(*b, 7, 2);
  Append(*b, 30, 2);
  Append(*b, 8, 2);
  EXPECT_EQ(a->held_from(0), b->held_from(0));
  EXPECT_EQ(Bytes(*a), Bytes(*b));
}

TEST(KvWindowTest, TrimRuleIsExact) {
  auto s = KvState::Create(WindowConfig());
  Append(*s, 37, 1);
  const int64_t held = s->held_from(0);
  ASSERT_EQ(held, 24);  // 37 - 8 - 4 = 25 -> block start 24
  for (int64_t p = 0; p <= 38; ++p) {
    const bool want = p <= 37 && (p == 37 || held <= std::max<int64_t>(0, p - kWindow));
    EXPECT_EQ(s->CanTrimTo(p), want) << p;
    EXPECT_EQ(s->View(p).ok(), want) << p;
  }
  EXPECT_TRUE(s->CanTrimTo(32));   // needs [24, 32): held
  EXPECT_FALSE(s->CanTrimTo(31));  // needs [23, 31): 23 was released
  const std::vector<uint8_t> before = Bytes(*s);
  const Status st = s->TrimTo(31);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("window"), std::string::npos);
  EXPECT_EQ(Bytes(*s), before);  // a refused trim changes nothing
  ASSERT_TRUE(s->TrimTo(32).ok());
  EXPECT_EQ(s->n_pos(), 32);
  EXPECT_EQ(s->held_from(0), 24);
  ExpectHeld(*s, 0, 32, 1);
  Append(*s, 10, 3);  // re-extending after a trim writes the new values
  ExpectHeld(*s, 0, 32, 1);
  ExpectHeld(*s, 32, 42, 3);
  EXPECT_EQ(s->held_from(0), ExpectedHeldFrom(42));
}

TEST(KvWindowTest, ShortStatesHoldEverything) {
  auto s = KvState::Create(WindowConfig());
  Append(*s, kWindow + kMargin + kBlock - 1, 1);  // nothing has fallen out yet
  EXPECT_EQ(s->held_from(0), 0);
  for (int64_t p = 0; p <= s->n_pos(); ++p) EXPECT_TRUE(s->CanTrimTo(p)) << p;
}

TEST(KvWindowTest, ViewsShareBlocksAndNeverChangeTheDonor) {
  auto donor = KvState::Create(WindowConfig());
  Append(*donor, 42, 1);
  const std::vector<uint8_t> donor_bytes = Bytes(*donor);
  std::vector<const void*> donor_ids;
  donor->ForEachBlock([&](const void* id, size_t) { donor_ids.push_back(id); });
  {
    auto view = donor->View(39);  // needs [31, 39); donor holds from 28
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->held_from(0), donor->held_from(0));
    std::vector<const void*> view_ids;
    view->ForEachBlock([&](const void* id, size_t) { view_ids.push_back(id); });
    for (const void* id : view_ids) {  // zero copy: every block of the view is a donor block
      EXPECT_NE(std::find(donor_ids.begin(), donor_ids.end(), id), donor_ids.end());
    }
    EXPECT_EQ(view->cow_bytes_copied(), 0u);
    Append(*view, 25, 7);  // copy-on-write of the shared tail (one block per group), then the window moves on
    EXPECT_EQ(view->cow_bytes_copied(), view->config().block_bytes());
    ExpectHeld(*view, 0, 39, 1);
    ExpectHeld(*view, 39, 64, 7);
    EXPECT_EQ(view->held_from(0), ExpectedHeldFrom(64));
    EXPECT_EQ(Bytes(*donor), donor_bytes);
  }
  EXPECT_EQ(Bytes(*donor), donor_bytes);
  for (size_t i = 0; i < donor->n_blocks(); ++i) EXPECT_EQ(donor->BlockUseCount(i), 1) << i;
  // The donor appending after a view was taken copies too, so the view is protected the same way.
  auto view = donor->View(42);
  ASSERT_TRUE(view.ok());
  const std::vector<uint8_t> view_bytes = Bytes(*view);
  Append(*donor, 9, 8);
  EXPECT_EQ(Bytes(*view), view_bytes);
}

TEST(KvWindowTest, SerializeRoundTripsWindowLayers) {
  for (KvDtype dt : {KvDtype::kF32, KvDtype::kF16}) {
    auto s = KvState::Create(WindowConfig(dt));
    Append(*s, 45, 4);
    const std::vector<uint8_t> bytes = Bytes(*s);
    uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 4, 4);
    EXPECT_EQ(version, kKvFormatVersionWindow);
    SpanSource src(bytes.data(), bytes.size());
    auto back = KvState::Deserialize(WindowConfig(dt), src);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(src.remaining(), 0u);
    EXPECT_EQ(back->n_pos(), 45);
    EXPECT_EQ(back->held_from(0), s->held_from(0));
    EXPECT_EQ(back->held_from(1), 0);
    EXPECT_EQ(back->bytes(), s->bytes());
    EXPECT_EQ(Bytes(*back), bytes);
    if (dt == KvDtype::kF32) ExpectHeld(*back, 0, 45, 4);
    // The stream carries only held positions: smaller than the same state with every layer full.
    KvConfig full = WindowConfig(dt);
    full.kinds.clear();
    auto f = KvState::Create(full);
    Append(*f, 45, 4);
    EXPECT_LT(bytes.size(), Bytes(*f).size());
    // A restored state keeps working: extend it like the original and compare.
    Append(*back, 5, 9);
    Append(*s, 5, 9);
    EXPECT_EQ(Bytes(*back), Bytes(*s));
  }
}

TEST(KvWindowTest, AllFullStatesKeepFormatVersionOne) {
  KvConfig c = WindowConfig();
  c.kinds.clear();
  auto s = KvState::Create(c);
  Append(*s, 9, 1);
  const std::vector<uint8_t> bytes = Bytes(*s);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  EXPECT_EQ(version, kKvFormatVersionFull);
  // Header (8 + 4 + 20 + 3 layers * 8 + 8) then 9 positions of 3 layers.
  EXPECT_EQ(bytes.size(), 64u + 9 * 3 * c.layer_position_bytes());
}

TEST(KvWindowTest, DeserializeRejectsInconsistentHeldRanges) {
  auto s = KvState::Create(WindowConfig());
  Append(*s, 45, 4);
  const std::vector<uint8_t> bytes = Bytes(*s);
  const size_t held_off = 64;  // the per-layer held_from array follows n_pos
  auto with_held = [&](std::vector<int> layers, int64_t v) {
    std::vector<uint8_t> b = bytes;
    for (int layer : layers) std::memcpy(b.data() + held_off + 8 * layer, &v, 8);
    SpanSource src(b.data(), b.size());
    return KvState::Deserialize(WindowConfig(), src).status();
  };
  int64_t stored = 0;
  std::memcpy(&stored, bytes.data() + held_off, 8);
  ASSERT_EQ(stored, s->held_from(0));
  EXPECT_TRUE(with_held({0, 2}, stored).ok());
  EXPECT_EQ(with_held({0, 2}, stored + 1).code(), StatusCode::kCorrupt);  // not block aligned
  EXPECT_EQ(with_held({0, 2}, 40).code(), StatusCode::kCorrupt);          // would miss keys position 45 needs
  EXPECT_EQ(with_held({0, 2}, -4).code(), StatusCode::kCorrupt);
  EXPECT_EQ(with_held({2}, 0).code(), StatusCode::kCorrupt);              // layers of one group disagree
  EXPECT_EQ(with_held({1}, 4).code(), StatusCode::kCorrupt);              // a full layer holds everything
  // A stream whose geometry says window but a config that says full (or another window) is refused.
  KvConfig other = WindowConfig();
  other.kinds[0].window = 16;
  other.kinds[2].window = 16;
  SpanSource src(bytes.data(), bytes.size());
  EXPECT_EQ(KvState::Deserialize(other, src).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember
