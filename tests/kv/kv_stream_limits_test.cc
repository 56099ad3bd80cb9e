// A serialized state is read back from files (the cold tier, `ember cache verify`), so its header is
// untrusted: a geometry or position count it claims must not make Create or Deserialize allocate more
// than the stream can fill, nor wrap the byte arithmetic (found by entry_file_fuzz).
#include <gtest/gtest.h>

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
  for (int64_t p = 0; p < n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      s.StoreK(l, p, row.data());
      s.StoreV(l, p, row.data());
    }
  }
  s.Commit(n);
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  return sink.Take();
}

// Offset of n_pos in a stream (kv/kv_format.h): magic, version, dtype[4], five i32, n_layer x 8 bytes.
size_t NPosOffset(const KvConfig& c) { return 4 + 4 + 4 + 5 * 4 + 8 * static_cast<size_t>(c.n_layer); }

TEST(KvStreamLimits, ClaimedPositionsMustBeInTheStream) {
  for (bool window : {false, true}) {
    KvConfig c = KvConfig::Uniform(2, 2, 4, 4, KvDtype::kF16, 4);
    if (window) c.kinds = {{StateKind::kFull, 0}, {StateKind::kWindow, 4}};
    std::vector<uint8_t> bytes = Stream(c, 6);
    // A stream of 6 positions that says it holds 2^20: refused before blocks for 2^20 positions exist.
    const int64_t claimed = int64_t{1} << 20;
    std::memcpy(bytes.data() + NPosOffset(c), &claimed, sizeof claimed);
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

}  // namespace
}  // namespace ember
