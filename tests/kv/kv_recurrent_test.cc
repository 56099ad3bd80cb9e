// Recurrent layers (StateKind::kRecurrent, Qwen3.5's gated delta net) in KvState: one refcounted block of
// constant size for all of them, zeros when fresh, copy-on-write on Reserve, trimmable and viewable only
// at n_pos, and serialized as format version 3 (kv/kv_format.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kv/kv_format.h"
#include "kv/kv_state.h"

namespace ember {
namespace {

constexpr int64_t kFloats = 1000;  // per recurrent layer; rounded up to 1008 in memory

// Layers 0, 1, 2 recurrent, layer 3 full attention (a hybrid in miniature).
KvConfig HybridConfig(KvDtype dtype = KvDtype::kF32) {
  KvConfig c = KvConfig::Uniform(4, 2, 4, 3, dtype, 4);
  const LayerStateSpec r{StateKind::kRecurrent, 0, kFloats};
  c.kinds = {r, r, r, LayerStateSpec{}};
  return c;
}

float Val(int tag, int layer, int64_t pos, int64_t i) { return tag * 1000.0f + layer * 100.0f + pos + i * 0.125f; }

// One step of a stand-in recurrence: the new state depends on the old one and the position.
float Step(float old, int tag, int layer, int64_t pos, int64_t i) { return old * 0.5f + Val(tag, layer, pos, i % 7); }

// What a forward pass does for n positions: K/V for attention layers, an in-place update for recurrent ones.
void Append(KvState& s, int64_t n, int tag) {
  ASSERT_TRUE(s.Reserve(n).ok());
  const KvConfig& c = s.config();
  std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
  for (int64_t p = s.n_pos(); p < s.n_pos() + n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      if (c.kind(l).kind == StateKind::kRecurrent) {
        float* st = s.RecurrentState(l);
        for (int64_t i = 0; i < c.kind(l).state_floats; ++i) st[i] = Step(st[i], tag, l, p, i);
        continue;
      }
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) k[i] = Val(tag, l, p, i);
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) v[i] = -Val(tag, l, p, i);
      s.StoreK(l, p, k.data());
      s.StoreV(l, p, v.data());
    }
  }
  s.Commit(n);
}

// The recurrent state of `layer` after positions [0, n) appended with `tag` from a fresh state.
std::vector<float> Expected(int layer, int64_t n, int tag) {
  std::vector<float> st(kFloats, 0.0f);
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t i = 0; i < kFloats; ++i) {
      st[static_cast<size_t>(i)] = Step(st[static_cast<size_t>(i)], tag, layer, p, i);
    }
  }
  return st;
}

// Reads go through the const overload: the mutable one is for a pass between Reserve and Commit.
const float* Ro(const KvState& s, int layer) { return s.RecurrentState(layer); }

std::vector<float> State(const KvState& s, int layer) {
  const float* p = s.RecurrentState(layer);
  return {p, p + s.config().kind(layer).state_floats};
}

float ReadK(const KvState& s, int layer, int64_t pos, int64_t i) {
  const KvConfig& c = s.config();
  const uint8_t* head = s.KHead(layer, pos / c.block_size, static_cast<int>(i / c.head_dim_k));
  return reinterpret_cast<const float*>(head)[(pos % c.block_size) * c.head_dim_k + i % c.head_dim_k];
}

std::vector<uint8_t> Bytes(const KvState& s) {
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  return sink.Take();
}

KvState Filled(int64_t n, int tag, const KvConfig& c = HybridConfig()) {
  KvState s = std::move(KvState::Create(c)).value();
  Append(s, n, tag);
  return s;
}

TEST(KvRecurrentTest, ValidateChecksStateFloats) {
  auto code_of = [](std::vector<LayerStateSpec> kinds) {
    KvConfig c = KvConfig::Uniform(static_cast<int32_t>(kinds.size()), 2, 4, 3, KvDtype::kF32, 4);
    c.kinds = std::move(kinds);
    return c.Validate();
  };
  const LayerStateSpec full{};
  EXPECT_TRUE(code_of({{StateKind::kRecurrent, 0, 1}, full}).ok());
  for (int64_t bad : {int64_t{0}, int64_t{-5}}) {
    const Status st = code_of({{StateKind::kRecurrent, 0, bad}, full});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("state_floats"), std::string::npos) << st.ToString();
  }
  // Attention layers have no recurrent state; recurrent layers no window.
  EXPECT_EQ(code_of({{StateKind::kFull, 0, 8}, full}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of({{StateKind::kWindow, 16, 8}, full}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of({{StateKind::kRecurrent, 16, 8}, full}).code(), StatusCode::kInvalidArgument);
  // The whole recurrent block stays within kMaxKvBlockBytes, and no count wraps.
  const int64_t max_floats = static_cast<int64_t>(kMaxKvBlockBytes / 4);
  const LayerStateSpec half{StateKind::kRecurrent, 0, max_floats / 2};
  EXPECT_TRUE(code_of({half, half}).ok());
  EXPECT_EQ(code_of({half, {StateKind::kRecurrent, 0, max_floats / 2 + 1}}).code(),
            StatusCode::kInvalidArgument);  // one float over (after alignment)
  EXPECT_EQ(code_of({{StateKind::kRecurrent, 0, max_floats + 1}}).code(), StatusCode::kInvalidArgument);
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(code_of({{StateKind::kRecurrent, 0, huge}, {StateKind::kRecurrent, 0, huge}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KvState::Create([&] {
              KvConfig c = HybridConfig();
              c.kinds[1].state_floats = huge;
              return c;
            }()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(KvRecurrentTest, FreshStateIsZerosInOneAlignedBlock) {
  const KvConfig c = HybridConfig();
  EXPECT_TRUE(c.has_recurrent());
  EXPECT_EQ(c.recurrent_bytes(), 3u * 1008 * 4);
  EXPECT_EQ(c.block_bytes(), c.layer_position_bytes() * 4);  // one attention layer per position block
  auto s = KvState::Create(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->bytes(), c.recurrent_bytes());
  EXPECT_EQ(s->n_blocks(), 1u);
  EXPECT_EQ(s->BlockUseCount(0), 1);
  EXPECT_EQ(s->group_bytes(1), c.recurrent_bytes());
  EXPECT_EQ(s->group_bytes(3), 0u);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(Ro(*s, l)) % 64, 0u) << l;
    EXPECT_EQ(State(*s, l), std::vector<float>(kFloats, 0.0f)) << l;
    EXPECT_EQ(s->held_from(l), 0);
  }
  // Slices are disjoint, in layer order, 1008 floats apart.
  EXPECT_EQ(Ro(*s, 1) - Ro(*s, 0), 1008);
  EXPECT_EQ(Ro(*s, 2) - Ro(*s, 1), 1008);
  // A fresh state may be viewed at 0 (the zero state, shared).
  auto v = s->View(0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Ro(*v, 0), Ro(*s, 0));
}

TEST(KvRecurrentTest, AllRecurrentConfigHasNoAttentionBlocks) {
  KvConfig c = KvConfig::Uniform(2, 1, 1, 1, KvDtype::kF16, 4);
  c.kinds = {{StateKind::kRecurrent, 0, 3}, {StateKind::kRecurrent, 0, 20}};
  auto s = KvState::Create(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(c.block_bytes(), 0u);
  EXPECT_EQ(s->bytes(), (16u + 32u) * 4);
  ASSERT_TRUE(s->Reserve(5).ok());
  s->RecurrentState(1)[19] = 42.0f;
  s->Commit(5);
  EXPECT_EQ(s->n_blocks(), 1u);
  EXPECT_EQ(s->bytes(), (16u + 32u) * 4);
  const std::vector<uint8_t> bytes = Bytes(*s);
  SpanSource in(bytes.data(), bytes.size());
  auto back = KvState::Deserialize(c, in);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->n_pos(), 5);
  EXPECT_EQ(Ro(*back, 1)[19], 42.0f);
  EXPECT_EQ(Bytes(*back), bytes);
}

TEST(KvRecurrentTest, ReserveWriteCommitUpdatesStateAndKeepsAttention) {
  KvState s = Filled(3, 1);
  Append(s, 6, 1);  // two passes: the recurrent state carries over between them
  EXPECT_EQ(s.n_pos(), 9);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(State(s, l), Expected(l, 9, 1)) << l;
    EXPECT_EQ(s.held_from(l), 9);
  }
  for (int64_t p = 0; p < 9; ++p) ASSERT_EQ(ReadK(s, 3, p, 5), Val(1, 3, p, 5)) << p;
  const KvConfig& c = s.config();
  EXPECT_EQ(s.held_from(3), 0);
  EXPECT_EQ(s.group_bytes(3), 3 * c.block_bytes());  // 9 positions: 3 blocks of 4
  EXPECT_EQ(s.bytes(), 3 * c.block_bytes() + c.recurrent_bytes());
  EXPECT_EQ(s.n_blocks(), 4u);
  size_t sum = 0, last = 0;
  s.ForEachBlock([&](const void*, size_t b) { sum += b, last = b; });
  EXPECT_EQ(sum, s.bytes());
  EXPECT_EQ(last, c.recurrent_bytes());  // the recurrent block comes last
  EXPECT_EQ(s.cow_bytes_copied(), 0u);   // nothing was shared
}

TEST(KvRecurrentTest, ViewAtNPosSharesThenReserveCopiesOnWrite) {
  KvState s = Filled(8, 2);  // block aligned: only the recurrent block can need a copy
  const std::vector<uint8_t> before = Bytes(s);
  auto v = s.View(8);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::vector<const void*> a, b;
  s.ForEachBlock([&](const void* id, size_t) { a.push_back(id); });
  v->ForEachBlock([&](const void* id, size_t) { b.push_back(id); });
  EXPECT_EQ(a, b);  // zero copy, the recurrent block included
  EXPECT_EQ(v->BlockUseCount(v->n_blocks() - 1), 2);
  EXPECT_EQ(Ro(*v, 0), Ro(s, 0));

  // The view extends: its Reserve copies the shared recurrent block, the donor's bytes stay.
  Append(*v, 3, 7);
  EXPECT_EQ(v->cow_bytes_copied(), s.config().recurrent_bytes());
  EXPECT_NE(Ro(*v, 0), Ro(s, 0));
  EXPECT_EQ(Bytes(s), before);
  EXPECT_EQ(State(s, 2), Expected(2, 8, 2));
  EXPECT_EQ(s.BlockUseCount(s.n_blocks() - 1), 1);

  // And the other way round: the donor extends after a view was taken; the view is protected.
  auto w = s.View(8);
  ASSERT_TRUE(w.ok());
  Append(s, 1, 3);
  EXPECT_EQ(s.cow_bytes_copied(), s.config().recurrent_bytes());
  EXPECT_EQ(Bytes(*w), before);
  // Appending again copies nothing more: the block is the state's own now.
  Append(s, 1, 3);
  EXPECT_EQ(s.cow_bytes_copied(), s.config().recurrent_bytes());
}

TEST(KvRecurrentTest, TrimAndViewOnlyAtNPos) {
  KvState s = Filled(9, 4);
  const std::vector<uint8_t> before = Bytes(s);
  const float* state = Ro(s, 0);
  EXPECT_TRUE(s.CanTrimTo(9));
  for (int64_t p : {0, 1, 4, 8}) {
    EXPECT_FALSE(s.CanTrimTo(p)) << p;
    const Status trim = s.TrimTo(p);
    EXPECT_EQ(trim.code(), StatusCode::kInvalidArgument) << p;
    EXPECT_NE(trim.message().find("recurrent"), std::string::npos) << trim.ToString();
    EXPECT_EQ(s.View(p).status().code(), StatusCode::kInvalidArgument) << p;
  }
  EXPECT_FALSE(s.CanTrimTo(10));
  EXPECT_EQ(s.TrimTo(10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.n_pos(), 9);
  EXPECT_EQ(Bytes(s), before);  // refusals change nothing
  ASSERT_TRUE(s.TrimTo(9).ok());  // a no-op
  EXPECT_EQ(Ro(s, 0), state);
  EXPECT_EQ(Bytes(s), before);
}

TEST(KvRecurrentTest, StateInFluxIsNeitherViewedTrimmedNorSerialized) {
  KvState s = Filled(5, 1);
  ASSERT_TRUE(s.Reserve(2).ok());
  s.RecurrentState(1)[0] = -1.0f;  // a pass half way through
  EXPECT_FALSE(s.CanTrimTo(5));
  EXPECT_EQ(s.View(5).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.TrimTo(5).code(), StatusCode::kFailedPrecondition);
  VectorSink sink;
  EXPECT_EQ(s.Serialize(sink).code(), StatusCode::kFailedPrecondition);
  s.Commit(2);
  EXPECT_TRUE(s.CanTrimTo(7));
  EXPECT_TRUE(s.View(7).ok());
  EXPECT_TRUE(s.Serialize(sink).ok());
}

TEST(KvRecurrentTest, AttentionAccessOnARecurrentLayerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  KvState s = Filled(4, 1);
  std::vector<float> row(8, 0.0f);
  EXPECT_DEATH(s.KHead(0, 0, 0), "IsRecurrent");
  EXPECT_DEATH(
      {
        (void)s.Reserve(1);
        s.StoreK(1, 4, row.data());
      },
      "IsRecurrent");
  EXPECT_DEATH(s.RecurrentState(0), "in_flux_");  // mutable access outside Reserve..Commit
  EXPECT_DEATH((void)Ro(s, 3), "IsRecurrent");  // not recurrent
}

TEST(KvRecurrentTest, SerializeRoundTripVersion3) {
  KvState s = Filled(9, 5);
  ASSERT_TRUE(s.Reserve(0).ok());
  s.RecurrentState(2)[17] = std::numeric_limits<float>::quiet_NaN();  // data, whatever its bits
  s.RecurrentState(2)[18] = -std::numeric_limits<float>::infinity();
  s.Commit(0);
  const std::vector<uint8_t> bytes = Bytes(s);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  EXPECT_EQ(version, kKvFormatVersionRecurrent);
  const KvConfig& c = s.config();
  // Header: 8 + 4 + 20 + 4 layers x 16 + n_pos 8 + held 4 x 8; then 9 positions of the one attention
  // layer, then 3 x 1000 floats (no padding).
  const size_t header = 8 + 4 + 20 + 4 * 16 + 8 + 4 * 8;
  EXPECT_EQ(bytes.size(), header + 9 * c.layer_position_bytes() + 3 * kFloats * 4);
  int64_t state_floats = 0;
  std::memcpy(&state_floats, bytes.data() + 32 + 8, 8);  // layer 0's record: kind, window, state_floats
  EXPECT_EQ(state_floats, kFloats);

  SpanSource src(bytes.data(), bytes.size());
  auto back = KvState::Deserialize(c, src);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(src.remaining(), 0u);
  EXPECT_EQ(back->n_pos(), 9);
  EXPECT_EQ(Bytes(*back), bytes);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(std::memcmp(Ro(*back, l), Ro(s, l), kFloats * 4), 0) << l;
  }
  EXPECT_TRUE(std::isnan(Ro(*back, 2)[17]));
  // A restored state keeps working: extend it like the original and compare.
  Append(*back, 3, 6);
  Append(s, 3, 6);
  EXPECT_EQ(Bytes(*back), Bytes(s));
}

TEST(KvRecurrentTest, DeserializeRefusesOtherGeometryNamingTheField) {
  const std::vector<uint8_t> bytes = Bytes(Filled(6, 1));
  auto read_as = [&](const KvConfig& c) {
    SpanSource src(bytes.data(), bytes.size());
    return KvState::Deserialize(c, src).status();
  };
  KvConfig other = HybridConfig();
  other.kinds[1].state_floats = 999;
  Status st = read_as(other);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("state_floats is 1000, this model expects 999"), std::string::npos) << st.ToString();
  other = HybridConfig();
  other.kinds[2] = LayerStateSpec{};
  st = read_as(other);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("layer state kind"), std::string::npos) << st.ToString();
  // A model without recurrent layers refuses the stream too.
  st = read_as(KvConfig::Uniform(4, 2, 4, 3, KvDtype::kF32, 4));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_TRUE(read_as(HybridConfig()).ok());
}

// Version 1 and 2 streams are byte for byte what ember wrote before recurrent layers existed (the
// constants were produced by the previous kv_serialize.cc from these very states).
TEST(KvRecurrentTest, OlderFormatsKeepTheirBytes) {
  auto golden = [](const KvConfig& c, int64_t n) {
    KvState s = std::move(KvState::Create(c)).value();
    std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
    for (int64_t chunk : {n / 3, n - n / 3}) {
      EXPECT_TRUE(s.Reserve(chunk).ok());
      for (int64_t p = s.n_pos(); p < s.n_pos() + chunk; ++p) {
        for (int l = 0; l < c.n_layer; ++l) {
          for (int64_t i = 0; i < c.kv_dim_k(); ++i) k[i] = l * 100.0f + p * 0.5f + i * 0.125f - 7.0f;
          for (int64_t i = 0; i < c.kv_dim_v(); ++i) v[i] = -(l * 100.0f + p * 0.5f + i * 0.125f - 7.0f);
          s.StoreK(l, p, k.data());
          s.StoreV(l, p, v.data());
        }
      }
      s.Commit(chunk);
    }
    const std::vector<uint8_t> b = Bytes(s);
    uint64_t h = 1469598103934665603ull;
    for (uint8_t x : b) h = (h ^ x) * 1099511628211ull;
    return std::pair<size_t, uint64_t>{b.size(), h};
  };
  KvConfig win = KvConfig::Uniform(3, 2, 4, 2, KvDtype::kF16, 4);
  win.window_margin = 4;
  win.kinds = {LayerStateSpec{StateKind::kWindow, 8}, LayerStateSpec{}, LayerStateSpec{StateKind::kWindow, 8}};
  EXPECT_EQ(golden(KvConfig::Uniform(2, 2, 4, 3, KvDtype::kF16, 4), 6),
            (std::pair<size_t, uint64_t>{392, 0x237379db3050f429ull}));
  EXPECT_EQ(golden(KvConfig::Uniform(3, 1, 4, 2, KvDtype::kF32, 8), 19),
            (std::pair<size_t, uint64_t>{1432, 0x4a539034f5e49762ull}));
  EXPECT_EQ(golden(win, 45), (std::pair<size_t, uint64_t>{1792, 0x27f0bbe3457175a1ull}));
}

}  // namespace
}  // namespace ember
