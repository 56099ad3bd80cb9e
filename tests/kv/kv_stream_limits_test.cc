// A serialized state is read back from files (the cold tier, `ember cache verify`), so its header is
// untrusted: a geometry or position count it claims must not make Create or Deserialize allocate more
// than the stream can fill, nor wrap the byte arithmetic (found by entry_file_fuzz).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kv/kv_format.h"
#include "kv/kv_state.h"

namespace ember {
namespace {

std::vector<uint8_t> Stream(const KvConfig& c, int64_t n) {
  KvState s = std::move(KvState::Create(c)).value();
  EXPECT_TRUE(s.Reserve(n).ok());
  std::vector<float> row(static_cast<size_t>(std::max(c.kv_dim_k(), c.kv_dim_v())), 0.5f);
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.kind(l).kind == StateKind::kRecurrent) std::fill_n(s.RecurrentState(l), c.kind(l).state_floats, 0.25f + l);
  }
  for (int64_t p = 0; p < n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      if (c.kind(l).kind == StateKind::kRecurrent) continue;
      s.StoreK(l, p, row.data());
      s.StoreV(l, p, row.data());
    }
  }
  s.Commit(n);
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  return sink.Take();
}

// Offset of n_pos in a stream (kv/kv_format.h): magic, version, dtype[4], five i32, n_layer x 8 bytes
// (16 in version 3, which a state with recurrent layers writes).
size_t NPosOffset(const KvConfig& c) {
  return 4 + 4 + 4 + 5 * 4 + (c.has_recurrent() ? 16 : 8) * static_cast<size_t>(c.n_layer);
}

// Layers 0 and 2 recurrent (state_floats 100 and 37), layer 1 full attention.
KvConfig Hybrid() {
  KvConfig c = KvConfig::Uniform(3, 2, 4, 4, KvDtype::kF16, 4);
  c.kinds = {{StateKind::kRecurrent, 0, 100}, {StateKind::kFull, 0, 0}, {StateKind::kRecurrent, 0, 37}};
  return c;
}

Status Read(const KvConfig& c, const std::vector<uint8_t>& bytes) {
  SpanSource src(bytes.data(), bytes.size());
  return KvState::Deserialize(c, src).status();
}

TEST(KvStreamLimits, ClaimedPositionsMustBeInTheStream) {
  for (int variant : {0, 1, 2}) {
    KvConfig c = KvConfig::Uniform(2, 2, 4, 4, KvDtype::kF16, 4);
    if (variant == 1) c.kinds = {{StateKind::kFull, 0}, {StateKind::kWindow, 4}};
    if (variant == 2) c = Hybrid();
    std::vector<uint8_t> bytes = Stream(c, 6);
    // A stream of 6 positions that says it holds 2^20: refused before blocks for 2^20 positions exist.
    const int64_t claimed = int64_t{1} << 20;
    std::memcpy(bytes.data() + NPosOffset(c), &claimed, sizeof claimed);
    if (variant == 2) {  // recurrent layers say they hold the state after the claimed positions
      for (int l : {0, 2}) std::memcpy(bytes.data() + NPosOffset(c) + 8 + 8 * l, &claimed, sizeof claimed);
    }
    SpanSource src(bytes.data(), bytes.size());
    auto st = KvState::Deserialize(c, src);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(st.status().message().find("1048576 positions"), std::string::npos) << st.status().ToString();
  }
}

TEST(KvStreamLimits, ExactStreamStillReads) {
  const KvConfig c = KvConfig::Uniform(2, 2, 4, 4, KvDtype::kF16, 4);
  const std::vector<uint8_t> bytes = Stream(c, 6);
  SpanSource src(bytes.data(), bytes.size());
  auto st = KvState::Deserialize(c, src);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->n_pos(), 6);
  EXPECT_EQ(src.remaining(), 0u);
}

TEST(KvStreamLimits, GeometryWhoseBlockWouldWrapOrExplodeIsRefused) {
  // (2^30 + 2^30) * 2^30 * 4 bytes per position wraps 64 bits; 2^20 x 2^10 x 4 x 32 x 2 is 512 GiB a block.
  for (KvConfig c : {KvConfig::Uniform(1, 1 << 30, 1 << 30, 1 << 30, KvDtype::kF32, 1 << 30),
                     KvConfig::Uniform(2, 1 << 20, 1 << 10, 1 << 10, KvDtype::kF32, 32)}) {
    auto st = KvState::Create(c);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.status().message().find("block"), std::string::npos) << st.status().ToString();
  }
  // The largest real geometries are far below the limit (a 405B model, f32, 256-position blocks).
  EXPECT_TRUE(KvState::Create(KvConfig::Uniform(126, 8, 128, 128, KvDtype::kF32, 256)).ok());
}

TEST(KvStreamLimits, TruncatedRecurrentStreamIsCorruptAtEveryLength) {
  const KvConfig c = Hybrid();
  const std::vector<uint8_t> bytes = Stream(c, 6);
  ASSERT_TRUE(Read(c, bytes).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    ASSERT_EQ(Read(c, cut).code(), StatusCode::kCorrupt) << len;
  }
  // A fresh state's stream is its header and the zero state: still every float is required.
  const std::vector<uint8_t> empty = Stream(c, 0);
  EXPECT_EQ(empty.size(), NPosOffset(c) + 8 + 3 * 8 + (100 + 37) * 4);
  EXPECT_TRUE(Read(c, empty).ok());
  const Status st = Read(c, std::vector<uint8_t>(empty.begin(), empty.end() - 4));
  EXPECT_EQ(st.code(), StatusCode::kCorrupt);
  EXPECT_NE(st.message().find("bytes of state follow"), std::string::npos) << st.ToString();
}

TEST(KvStreamLimits, RecurrentLayerMustHoldExactlyNPos) {
  const KvConfig c = Hybrid();
  std::vector<uint8_t> bytes = Stream(c, 6);
  const size_t held_at = NPosOffset(c) + 8;  // n_layer x i64 held_from follow n_pos
  int64_t held = 0;
  std::memcpy(&held, bytes.data() + held_at + 2 * 8, 8);
  ASSERT_EQ(held, 6);  // layer 2 (recurrent) holds the state after the last position
  for (int64_t bad : {int64_t{0}, int64_t{4}, int64_t{7}, int64_t{-1}}) {
    std::vector<uint8_t> b = bytes;
    std::memcpy(b.data() + held_at + 2 * 8, &bad, 8);
    const Status st = Read(c, b);
    EXPECT_EQ(st.code(), StatusCode::kCorrupt) << bad;
    EXPECT_NE(st.message().find("recurrent layer 2"), std::string::npos) << st.ToString();
  }
}

TEST(KvStreamLimits, VersionMustFitTheLayerKinds) {
  // A version 3 stream without a recurrent layer: a window stream with state_floats = 0 inserted.
  KvConfig win = KvConfig::Uniform(2, 2, 4, 4, KvDtype::kF16, 4);
  win.kinds = {{StateKind::kFull, 0}, {StateKind::kWindow, 4}};
  std::vector<uint8_t> v2 = Stream(win, 6);
  ASSERT_TRUE(Read(win, v2).ok());
  std::vector<uint8_t> v3 = v2;
  const uint32_t three = 3;
  std::memcpy(v3.data() + 4, &three, 4);
  const size_t layers_at = 4 + 4 + 4 + 5 * 4;
  for (int l = 1; l >= 0; --l) v3.insert(v3.begin() + static_cast<std::ptrdiff_t>(layers_at + 8 * (l + 1)), 8, 0);
  Status st = Read(win, v3);
  EXPECT_EQ(st.code(), StatusCode::kCorrupt);
  EXPECT_NE(st.message().find("without a recurrent layer"), std::string::npos) << st.ToString();

  // A version 2 stream of recurrent layers: a hybrid stream with its state_floats removed.
  const KvConfig c = Hybrid();
  std::vector<uint8_t> b = Stream(c, 6);
  const uint32_t two = 2;
  std::memcpy(b.data() + 4, &two, 4);
  for (int l = 2; l >= 0; --l) {
    const auto at = b.begin() + static_cast<std::ptrdiff_t>(layers_at + 16 * l + 8);
    b.erase(at, at + 8);
  }
  st = Read(c, b);
  EXPECT_EQ(st.code(), StatusCode::kCorrupt);
  EXPECT_NE(st.message().find("cannot hold recurrent layers"), std::string::npos) << st.ToString();

  // A version from the future.
  b = Stream(c, 6);
  const uint32_t four = 4;
  std::memcpy(b.data() + 4, &four, 4);
  EXPECT_EQ(Read(c, b).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace ember
