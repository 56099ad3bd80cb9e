#include "coldtier/entry_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "test_state.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::MakeState;
using coldtier_test::Tokens;

constexpr const char* kDir = "/cold/id/ns";
constexpr const char* kPath = "/cold/id/ns/e.entry";

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
  KvState s = MakeState(6, 2);
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

}  // namespace
}  // namespace ember
