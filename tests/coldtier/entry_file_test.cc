#include "coldtier/entry_file.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <functional>
#include <utility>

#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "test_state.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::HybridConfig;
using coldtier_test::MakeState;
using coldtier_test::Tokens;

constexpr const char* kDir = "/cold/id/ns";
constexpr const char* kPath = "/cold/id/ns/e.entry";
// Size and FNV-1a of the version 1 file of MakeState(10, 1) (Version1FilesKeepTheirBytes).
constexpr size_t kGoldenV1Size = 5272;
constexpr uint64_t kGoldenV1Fnv = 0x920646a169fefe61ull;

class EntryFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.CreateDirs(kDir).ok()); }
  StatusOr<uint64_t> Write(const KvState& s, const std::vector<int32_t>& tokens) {
    return WriteEntry(env_, kDir, "e", {"id", "tenant", tokens, &s});
  }
  FaultInjectionEnv env_;
};

TEST_F(EntryFileTest, RoundTripIsBitwiseEqual) {
  KvState s = MakeState(10, 1);
  std::vector<int32_t> tokens = Tokens(10);
  auto size = Write(s, tokens);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, *env_.FileSize(kPath));
  auto h = ReadHeader(env_, kPath);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->identity, "id");
  EXPECT_EQ(h->ns, "tenant");
  EXPECT_EQ(h->tokens, tokens);
  EXPECT_TRUE(SameGeometry(h->config, s.config()));
  EXPECT_TRUE(h->Trimmable());
  ASSERT_EQ(h->tensors.size(), 1u);
  EXPECT_EQ(h->tensors[0].offset % kEntryAlign, 0u);
  auto e = ReadEntry(env_, kPath, true);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(Bytes(e->state), Bytes(s));
  // Nothing but the final file is left behind.
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

TEST_F(EntryFileTest, RejectsStateTokenMismatch) {
  KvState s = MakeState(5, 1);
  EXPECT_EQ(Write(s, Tokens(4)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EntryFileTest, EveryFlippedHeaderByteIsCorrupt) {
  for (const KvConfig& c : {coldtier_test::SmallConfig(), HybridConfig()}) {  // format versions 1 and 2
    KvState s = MakeState(6, 2, c);
    ASSERT_TRUE(Write(s, Tokens(6)).ok());
    uint64_t data_offset = ReadHeader(env_, kPath)->data_offset;
    std::vector<uint8_t> pristine = *env_.ReadFile(kPath);
    // Every byte of the preamble and header (the zero padding before the data is not covered).
    uint64_t header_length = 0;
    std::memcpy(&header_length, pristine.data() + 16, 8);  // the preamble's header_length field
    uint64_t covered = kPreambleSize + header_length;
    ASSERT_LE(covered, data_offset);
    for (uint64_t off = 0; off < covered; ++off) {
      env_.PutDurableFile(kPath, pristine);
      ASSERT_TRUE(env_.FlipByte(kPath, off).ok());
      auto bad = ReadHeader(env_, kPath);
      ASSERT_FALSE(bad.ok()) << "flip at " << off;
      EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt) << "flip at " << off;
      EXPECT_NE(bad.status().message().find(kPath), std::string::npos);
    }
  }
}

TEST_F(EntryFileTest, FlippedTensorByteIsCaughtByChecksum) {
  KvState s = MakeState(9, 3);
  ASSERT_TRUE(Write(s, Tokens(9)).ok());
  uint64_t data_offset = ReadHeader(env_, kPath)->data_offset;
  ASSERT_TRUE(env_.FlipByte(kPath, data_offset + 100).ok());
  EXPECT_TRUE(ReadHeader(env_, kPath).ok());  // the header is intact
  auto e = ReadEntry(env_, kPath, true);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(e.status().message().find("checksum"), std::string::npos);
}

TEST_F(EntryFileTest, TruncatedFileIsCorruptAtEveryLength) {
  KvState s = MakeState(7, 4);
  ASSERT_TRUE(Write(s, Tokens(7)).ok());
  std::vector<uint8_t> pristine = *env_.ReadFile(kPath);
  for (uint64_t len : {uint64_t{0}, uint64_t{10}, uint64_t{kPreambleSize}, uint64_t{100}, uint64_t{4096},
                       uint64_t(pristine.size() - 1)}) {
    env_.PutDurableFile(kPath, pristine);
    ASSERT_TRUE(env_.Truncate(kPath, len).ok());
    EXPECT_EQ(ReadHeader(env_, kPath).status().code(), StatusCode::kCorrupt) << len;
    EXPECT_EQ(ReadEntry(env_, kPath, false).status().code(), StatusCode::kCorrupt) << len;
  }
}

TEST_F(EntryFileTest, ReadErrorKeepsIoCode) {
  KvState s = MakeState(3, 1);
  ASSERT_TRUE(Write(s, Tokens(3)).ok());
  env_.set_read_error(true);
  EXPECT_EQ(ReadEntry(env_, kPath, true).status().code(), StatusCode::kIoError);
}

TEST_F(EntryFileTest, NoSpaceAtAnyPointLeavesNothing) {
  KvState s = MakeState(12, 5);
  for (uint64_t budget : {0, 10, 100, 4096, 5000}) {
    env_.set_write_budget(budget);
    auto r = Write(s, Tokens(12));
    EXPECT_EQ(r.status().code(), StatusCode::kNoSpace) << budget;
    EXPECT_TRUE(env_.AllFiles().empty()) << budget;
  }
  env_.clear_write_budget();
  env_.set_sync_error(true);
  EXPECT_EQ(Write(s, Tokens(12)).status().code(), StatusCode::kIoError);
  EXPECT_TRUE(env_.AllFiles().empty());
}

// The leveldb-style crash test: cut power at every mutating call of a write (over an older entry of
// the same name) and check that what survives is the old entry or the new one, whole, never a mix.
TEST_F(EntryFileTest, CrashAtEveryStepLeavesOldOrNewEntryWhole) {
  KvState old_state = MakeState(5, 6);
  KvState new_state = MakeState(11, 7);
  std::vector<int32_t> old_tokens = Tokens(5), new_tokens = Tokens(11, 500);
  int64_t steps = 0;
  {  // count the calls one clean write takes
    FaultInjectionEnv probe;
    ASSERT_TRUE(probe.CreateDirs(kDir).ok());
    ASSERT_TRUE(WriteEntry(probe, kDir, "e", {"id", "tenant", new_tokens, &new_state}).ok());
    steps = probe.mutating_calls();
  }
  ASSERT_GE(steps, 5);
  int saw_old = 0, saw_new = 0;
  for (int64_t n = 1; n <= steps + 1; ++n) {
    FaultInjectionEnv env;
    ASSERT_TRUE(env.CreateDirs(kDir).ok());
    ASSERT_TRUE(WriteEntry(env, kDir, "e", {"id", "tenant", old_tokens, &old_state}).ok());
    env.set_crash_after(n);
    (void)WriteEntry(env, kDir, "e", {"id", "tenant", new_tokens, &new_state});
    env.PowerLoss();
    auto e = ReadEntry(env, kPath, true);
    ASSERT_TRUE(e.ok()) << "crash at call " << n << ": " << e.status().ToString();
    if (e->header.tokens == old_tokens) {
      EXPECT_EQ(Bytes(e->state), Bytes(old_state));
      ++saw_old;
    } else {
      EXPECT_EQ(e->header.tokens, new_tokens);
      EXPECT_EQ(Bytes(e->state), Bytes(new_state));
      ++saw_new;
    }
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);  // the last step (after the directory sync) keeps the new one
}

TEST_F(EntryFileTest, CrashDuringFirstWriteLeavesNoReadableEntry) {
  KvState s = MakeState(8, 8);
  for (int64_t n = 1; n <= 5; ++n) {
    FaultInjectionEnv env;
    ASSERT_TRUE(env.CreateDirs(kDir).ok());
    env.set_crash_after(n);
    EXPECT_FALSE(WriteEntry(env, kDir, "e", {"id", "tenant", Tokens(8), &s}).ok());
    env.PowerLoss();
    // Whatever survives is absent or whole; a surviving temp file is never read as an entry.
    auto e = ReadEntry(env, kPath, true);
    EXPECT_EQ(e.status().code(), StatusCode::kNotFound) << n;
  }
}

// ---- States with recurrent layers: entry format version 2 ----

TEST_F(EntryFileTest, RecurrentStateRoundTripsAsVersion2) {
  const KvState s = MakeState(10, 3, HybridConfig());
  const std::vector<int32_t> tokens = Tokens(10);
  ASSERT_TRUE(Write(s, tokens).ok());
  std::vector<uint8_t> file = *env_.ReadFile(kPath);
  uint32_t version = 0;
  std::memcpy(&version, file.data() + 8, 4);
  EXPECT_EQ(version, kEntryFormatVersionRecurrent);
  auto h = ReadHeader(env_, kPath);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->format_version, kEntryFormatVersionRecurrent);
  ASSERT_EQ(h->config.kinds.size(), 4u);
  EXPECT_EQ(h->config.kinds[1].kind, StateKind::kRecurrent);
  EXPECT_EQ(h->config.kinds[1].state_floats, 1000);
  EXPECT_EQ(h->config.kinds[3].state_floats, 0);
  EXPECT_TRUE(SameGeometry(h->config, s.config()));
  EXPECT_FALSE(h->Trimmable());  // recurrent layers serve only their own length
  KvConfig other = HybridConfig();
  other.kinds[2].state_floats = 1001;
  EXPECT_FALSE(SameGeometry(h->config, other));
  auto e = ReadEntry(env_, kPath, true);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->state.n_pos(), 10);
  EXPECT_EQ(Bytes(e->state), Bytes(s));
  EXPECT_EQ(std::memcmp(std::as_const(e->state).RecurrentState(2), s.RecurrentState(2), 1000 * 4), 0);
}

TEST_F(EntryFileTest, RecurrentFileFlippedOrTruncatedDataIsCorrupt) {
  const KvState s = MakeState(9, 4, HybridConfig());
  ASSERT_TRUE(Write(s, Tokens(9)).ok());
  const std::vector<uint8_t> pristine = *env_.ReadFile(kPath);
  const uint64_t data_offset = ReadHeader(env_, kPath)->data_offset;
  // The last byte of the stream is recurrent state (layer 2's last float).
  ASSERT_TRUE(env_.FlipByte(kPath, pristine.size() - 1).ok());
  auto e = ReadEntry(env_, kPath, true);
  EXPECT_EQ(e.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(e.status().message().find("checksum"), std::string::npos) << e.status().ToString();
  for (uint64_t len : {data_offset + 10, uint64_t(pristine.size() - 4)}) {
    env_.PutDurableFile(kPath, pristine);
    ASSERT_TRUE(env_.Truncate(kPath, len).ok());
    EXPECT_EQ(ReadEntry(env_, kPath, false).status().code(), StatusCode::kCorrupt) << len;
  }
}

// Rewrites the file at kPath with the header bytes changed by `edit` and the preamble's version set to
// `version` (header length and checksum recomputed), as a hostile or buggy writer could.
void RewriteHeader(FaultInjectionEnv& env, uint32_t version,
                   const std::function<void(std::vector<uint8_t>&)>& edit) {
  std::vector<uint8_t> f = *env.ReadFile(kPath);
  uint64_t header_length = 0, data_offset = 0;
  std::memcpy(&header_length, f.data() + 16, 8);
  std::memcpy(&data_offset, f.data() + 24, 8);
  const auto header_begin = f.begin() + kPreambleSize;
  std::vector<uint8_t> header(header_begin, header_begin + static_cast<std::ptrdiff_t>(header_length));
  edit(header);
  ASSERT_LE(kPreambleSize + header.size(), data_offset);
  std::vector<uint8_t> out(f.begin(), f.begin() + kPreambleSize);
  std::memcpy(out.data() + 8, &version, 4);
  const uint64_t len = header.size();
  std::memcpy(out.data() + 16, &len, 8);
  const uint64_t seed = XXH3_64bits(out.data(), kPreambleChecksummed);
  const uint64_t sum = XXH3_64bits_withSeed(header.data(), header.size(), seed);
  std::memcpy(out.data() + 40, &sum, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.resize(data_offset, 0);
  out.insert(out.end(), f.begin() + static_cast<std::ptrdiff_t>(data_offset), f.end());
  env.PutDurableFile(kPath, out);
}

// Header offset of layer l's record: identity "id", namespace "tenant", n tokens, the KvConfig's 24 bytes.
size_t LayerRecord(size_t n_tokens, size_t record_bytes, int l) {
  return (4 + 2) + (4 + 6) + 8 + 4 * n_tokens + 24 + record_bytes * static_cast<size_t>(l);
}

TEST_F(EntryFileTest, HeaderVersionMustFitTheLayerKinds) {
  // Sanity: rewriting without a change reads back.
  KvState hybrid = MakeState(6, 1, HybridConfig());
  ASSERT_TRUE(Write(hybrid, Tokens(6)).ok());
  RewriteHeader(env_, kEntryFormatVersionRecurrent, [](std::vector<uint8_t>&) {});
  ASSERT_TRUE(ReadEntry(env_, kPath, true).ok());
  // A version 1 header declaring recurrent layers (no writer made one): refused.
  RewriteHeader(env_, kEntryFormatVersion, [](std::vector<uint8_t>& h) {
    for (int l = 3; l >= 0; --l) {
      const auto at = h.begin() + static_cast<std::ptrdiff_t>(LayerRecord(6, 24, l) + 16);
      h.erase(at, at + 8);  // drop state_floats: version 1 records are 16 bytes
    }
  });
  auto bad = ReadHeader(env_, kPath);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(bad.status().message().find("recurrent"), std::string::npos) << bad.status().ToString();

  // A version 2 header without a recurrent layer: refused too (writers choose the version by the kinds).
  KvState full = MakeState(6, 1);
  ASSERT_TRUE(Write(full, Tokens(6)).ok());
  RewriteHeader(env_, kEntryFormatVersionRecurrent, [](std::vector<uint8_t>& h) {
    for (int l = 1; l >= 0; --l) h.insert(h.begin() + static_cast<std::ptrdiff_t>(LayerRecord(6, 16, l) + 16), 8, 0);
  });
  bad = ReadHeader(env_, kPath);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(bad.status().message().find("without a recurrent layer"), std::string::npos) << bad.status().ToString();

  // A recurrent layer whose state_floats is 0 or negative, or an attention layer with one.
  for (auto [layer, value] : {std::pair{1, int64_t{0}}, std::pair{0, int64_t{-8}}, std::pair{3, int64_t{8}}}) {
    ASSERT_TRUE(Write(hybrid, Tokens(6)).ok());
    RewriteHeader(env_, kEntryFormatVersionRecurrent, [&](std::vector<uint8_t>& h) {
      std::memcpy(h.data() + LayerRecord(6, 24, layer) + 16, &value, 8);
    });
    bad = ReadHeader(env_, kPath);
    EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt) << layer;
    EXPECT_NE(bad.status().message().find("state_floats"), std::string::npos) << bad.status().ToString();
  }
  // A state_floats the model does not have reads as a header, but not as this model's state.
  ASSERT_TRUE(Write(hybrid, Tokens(6)).ok());
  RewriteHeader(env_, kEntryFormatVersionRecurrent, [](std::vector<uint8_t>& h) {
    const int64_t v = int64_t{1} << 40;
    std::memcpy(h.data() + LayerRecord(6, 24, 0) + 16, &v, 8);
  });
  ASSERT_TRUE(ReadHeader(env_, kPath).ok());
  EXPECT_FALSE(SameGeometry(ReadHeader(env_, kPath)->config, HybridConfig()));
  EXPECT_EQ(ReadEntry(env_, kPath, false).status().code(), StatusCode::kCorrupt);
}

// Files of states without recurrent layers are byte for byte what ember wrote before version 2 existed
// (the constant was produced by the previous entry_file.cc and kv serializer from this very state).
TEST_F(EntryFileTest, Version1FilesKeepTheirBytes) {
  KvState s = MakeState(10, 1);
  ASSERT_TRUE(Write(s, Tokens(10)).ok());
  const std::vector<uint8_t> f = *env_.ReadFile(kPath);
  uint64_t h = 1469598103934665603ull;
  for (uint8_t x : f) h = (h ^ x) * 1099511628211ull;
  EXPECT_EQ(f.size(), kGoldenV1Size);
  EXPECT_EQ(h, kGoldenV1Fnv);
  EXPECT_EQ(ReadHeader(env_, kPath)->format_version, kEntryFormatVersion);
}

}  // namespace
}  // namespace ember
