#include "coldtier/cold_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "test_state.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::HybridConfig;
using coldtier_test::MakeState;
using coldtier_test::SmallConfig;
using coldtier_test::Tokens;

constexpr const char* kRoot = "/cache";

class ColdStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<ColdStore> Open(uint64_t cap = 0, std::string identity = "model-a",
                                  const KvConfig& kv = SmallConfig()) {
    ColdStoreOptions o{kRoot, std::move(identity), kv, cap, true};
    auto s = ColdStore::Open(env_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // Puts an entry of n tokens (values base, base+1, ...) with state tag `tag`.
  void Put(ColdStore& s, const std::string& ns, const std::vector<int32_t>& tokens, int tag) {
    KvState st = MakeState(static_cast<int64_t>(tokens.size()), tag);
    Status r = s.Put(ns, tokens, st);
    ASSERT_TRUE(r.ok()) << r.ToString();
  }
  std::vector<std::string> EntryFiles() {
    std::vector<std::string> out;
    for (const std::string& f : env_.AllFiles()) {
      if (f.size() > 6 && f.substr(f.size() - 6) == ".entry") out.push_back(f);
    }
    return out;
  }
  FaultInjectionEnv env_;
};

TEST_F(ColdStoreTest, FindRestoreRoundTripIsBitwiseEqual) {
  auto store = Open();
  std::vector<int32_t> tokens = Tokens(10);
  KvState original = MakeState(10, 1);
  ASSERT_TRUE(store->Put("ns", tokens, original).ok());
  // An exact repeat is served as P[:-1] + 1 token: p = len - 1.
  auto m = store->Find(tokens, "ns");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->usable, 9);
  EXPECT_EQ(m->entry_tokens, 10);
  auto restored = store->Restore(*m);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  KvState expect = std::move(original.View(9)).value();
  EXPECT_EQ(Bytes(*restored), Bytes(expect));
  EXPECT_EQ(store->counters().restores, 1u);
}

TEST_F(ColdStoreTest, UsablePrefixRuleAndMisses) {
  auto store = Open();
  Put(*store, "ns", Tokens(8), 1);
  std::vector<int32_t> longer = Tokens(12);
  EXPECT_EQ(store->Find(longer, "ns")->usable, 8);  // LCP = 8 < len - 1
  std::vector<int32_t> diverge = Tokens(8);
  diverge[5] = -1;
  EXPECT_EQ(store->Find(diverge, "ns")->usable, 5);
  std::vector<int32_t> other = Tokens(8, 900);
  EXPECT_FALSE(store->Find(other, "ns").has_value());              // p = 0 is a miss
  EXPECT_FALSE(store->Find(longer, "other-ns").has_value());       // namespace isolation
  EXPECT_FALSE(store->Find(longer, "ns", /*better_than=*/8).has_value());  // RAM already as long
  EXPECT_TRUE(store->Find(longer, "ns", 7).has_value());
  EXPECT_FALSE(store->Find(std::vector<int32_t>{}, "ns").has_value());
}

TEST_F(ColdStoreTest, LongestUsablePrefixWins) {
  auto store = Open();
  std::vector<int32_t> a = Tokens(6);
  std::vector<int32_t> b = Tokens(10);
  b[8] = 7;  // b shares 8 tokens with the prompt
  Put(*store, "ns", a, 1);
  Put(*store, "ns", b, 2);
  auto m = store->Find(Tokens(20), "ns");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->usable, 8);
  EXPECT_EQ(m->entry_tokens, 10);
}

TEST_F(ColdStoreTest, DedupReplacesSameTokens) {
  auto store = Open();
  Put(*store, "ns", Tokens(6), 1);
  Put(*store, "ns", Tokens(6), 2);
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(EntryFiles().size(), 1u);
  EXPECT_EQ(store->counters().dedup_replaced, 1u);
  auto r = store->Restore(*store->Find(Tokens(7), "ns"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Bytes(*r), Bytes(MakeState(6, 2)));  // the newer state
  EXPECT_EQ(store->bytes(), *env_.FileSize(EntryFiles()[0]));
}

TEST_F(ColdStoreTest, SupersedeDropsStrictPrefixesOfSameNamespaceOnly) {
  auto store = Open();
  std::vector<int32_t> sibling = Tokens(6);
  sibling[5] = -5;
  Put(*store, "ns", sibling, 1);  // not a prefix of the 10-token entry
  Put(*store, "ns", Tokens(4), 1);  // shorter than sibling: supersedes nothing
  Put(*store, "other", Tokens(4), 1);
  EXPECT_EQ(store->counters().superseded, 0u);
  Put(*store, "ns", Tokens(10), 2);  // drops ns/4 only
  EXPECT_EQ(store->counters().superseded, 1u);
  EXPECT_EQ(store->entries(), 3u);  // other/4, ns/sibling, ns/10
  EXPECT_EQ(EntryFiles().size(), 3u);
}

TEST_F(ColdStoreTest, CapEvictsOldestMtimeAndRestoreTouches) {
  auto probe = Open();
  Put(*probe, "probe", Tokens(4), 1);
  uint64_t one = probe->bytes();  // every 4-token entry has the same size
  ASSERT_TRUE(env_.RemoveFile(EntryFiles()[0]).ok());
  probe.reset();  // one store per directory at a time
  auto store = Open(3 * one);
  Put(*store, "ns", Tokens(4, 100), 1);
  env_.AdvanceMicros(1000);
  Put(*store, "ns", Tokens(4, 200), 2);
  env_.AdvanceMicros(1000);
  Put(*store, "ns", Tokens(4, 300), 3);
  env_.AdvanceMicros(1000);
  ASSERT_TRUE(store->Restore(*store->Find(Tokens(5, 100), "ns")).ok());  // 100 is now the newest
  env_.AdvanceMicros(1000);
  Put(*store, "ns", Tokens(4, 400), 4);
  EXPECT_EQ(store->counters().evictions, 1u);
  EXPECT_EQ(store->entries(), 3u);
  EXPECT_LE(store->bytes(), 3 * one);
  EXPECT_TRUE(store->Find(Tokens(5, 100), "ns").has_value());
  EXPECT_FALSE(store->Find(Tokens(5, 200), "ns").has_value());  // the oldest went
  // An entry larger than the whole cap is not kept.
  std::vector<int32_t> big = Tokens(200, 1000);
  EXPECT_EQ(store->Put("ns", big, MakeState(200, 9)).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(store->Find(Tokens(201, 1000), "ns").has_value());
  EXPECT_EQ(EntryFiles().size(), 3u);
}

TEST_F(ColdStoreTest, RestartScanRestoresIndex) {
  {
    auto store = Open();
    Put(*store, "ns", Tokens(9), 3);
  }
  auto store = Open();
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(store->counters().scanned, 1u);
  auto m = store->Find(Tokens(9), "ns");
  ASSERT_TRUE(m.has_value());
  EXPECT_GE(m->usable, 8);  // cached_tokens >= len - 1 after a restart
  auto r = store->Restore(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Bytes(*r), Bytes(std::move(MakeState(9, 3).View(8)).value()));
}

// Recurrent layers (entry format version 2): an entry serves only prompts that extend it whole, survives
// a restart scan, restores bitwise; a store of another recurrent geometry deletes it at scan.
TEST_F(ColdStoreTest, RecurrentEntryServesOnlyItsWholeLengthAcrossARestart) {
  const KvState original = MakeState(10, 5, HybridConfig());
  {
    auto store = Open(0, "model-a", HybridConfig());
    ASSERT_TRUE(store->Put("ns", Tokens(10), original).ok());
  }
  auto store = Open(0, "model-a", HybridConfig());
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(store->counters().corrupt_deleted, 0u);
  EXPECT_FALSE(store->Find(Tokens(10), "ns").has_value());  // usable 9: the state cannot rewind
  std::vector<int32_t> diverge = Tokens(12);
  diverge[6] = -1;
  EXPECT_FALSE(store->Find(diverge, "ns").has_value());
  auto m = store->Find(Tokens(12), "ns");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->usable, 10);
  auto r = store->Restore(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Bytes(*r), Bytes(original));
  store.reset();
  KvConfig other = HybridConfig();
  other.kinds[0].state_floats = 999;
  auto s = ColdStore::Open(env_, ColdStoreOptions{kRoot, "model-a", other, 0, true});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->entries(), 0u);
  EXPECT_EQ((*s)->counters().corrupt_deleted, 1u);
}

TEST_F(ColdStoreTest, ScanDeletesTempAndCorruptFilesAndLeavesForeignIdentity) {
  std::string good, bad_header, bad_data, truncated;
  {
    auto store = Open();
    Put(*store, "ns", Tokens(5, 100), 1);
    Put(*store, "ns", Tokens(5, 200), 1);
    Put(*store, "ns", Tokens(5, 300), 1);
    Put(*store, "ns", Tokens(5, 400), 1);
    auto files = EntryFiles();
    ASSERT_EQ(files.size(), 4u);
    good = store->Find(Tokens(6, 100), "ns")->path;
    bad_header = store->Find(Tokens(6, 200), "ns")->path;
    bad_data = store->Find(Tokens(6, 300), "ns")->path;
    truncated = store->Find(Tokens(6, 400), "ns")->path;
    std::string ns_dir = store->NamespaceDir("ns");
    env_.PutDurableFile(ns_dir + "/leftover.tmp", {1, 2, 3});
    env_.PutDurableFile(ns_dir + "/README", {4});  // not ours to judge
  }
  ASSERT_TRUE(env_.FlipByte(bad_header, 60).ok());
  ASSERT_TRUE(env_.FlipByte(bad_data, kEntryAlign + 5).ok());
  ASSERT_TRUE(env_.Truncate(truncated, 4500).ok());
  // A foreign identity's directory, with an entry and a temp file: never touched.
  {
    auto other = Open(0, "model-b");
    Put(*other, "ns", Tokens(5, 100), 1);
    env_.PutDurableFile(other->NamespaceDir("ns") + "/x.tmp", {9});
  }
  std::vector<std::string> before = env_.AllFiles();
  size_t foreign = 0;
  for (const std::string& f : before) foreign += f.rfind("/cache/model-b/", 0) == 0;
  ASSERT_EQ(foreign, 2u);

  auto store = Open();
  EXPECT_EQ(store->counters().temp_deleted, 1u);
  EXPECT_EQ(store->counters().corrupt_deleted, 2u);  // header flip, truncation (data is lazy)
  EXPECT_EQ(store->entries(), 2u);
  size_t foreign_after = 0;
  for (const std::string& f : env_.AllFiles()) foreign_after += f.rfind("/cache/model-b/", 0) == 0;
  EXPECT_EQ(foreign_after, 2u);
  EXPECT_FALSE(env_.FileSize(bad_header).ok());
  EXPECT_FALSE(env_.FileSize(truncated).ok());
  EXPECT_TRUE(env_.FileSize(store->NamespaceDir("ns") + "/README").ok());

  // Tensor corruption is found on restore: deleted, counted, error returned for the caller to fall back.
  auto m = store->Find(Tokens(6, 300), "ns");
  ASSERT_TRUE(m.has_value());
  auto r = store->Restore(*m);
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(store->counters().restore_failures, 1u);
  EXPECT_FALSE(env_.FileSize(bad_data).ok());
  EXPECT_FALSE(store->Find(Tokens(6, 300), "ns").has_value());
  EXPECT_TRUE(store->Restore(*store->Find(Tokens(6, 100), "ns")).ok());
  EXPECT_EQ(good, store->Find(Tokens(6, 100), "ns")->path);
}

TEST_F(ColdStoreTest, MismatchedGeometryIsDeletedAtScan) {
  {
    auto store = Open();
    Put(*store, "ns", Tokens(5), 1);
  }
  KvConfig c = SmallConfig();
  c.head_dim_k = 8;
  auto s = ColdStore::Open(env_, ColdStoreOptions{kRoot, "model-a", c, 0, true});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->entries(), 0u);
  EXPECT_EQ((*s)->counters().corrupt_deleted, 1u);
  EXPECT_TRUE(EntryFiles().empty());
}

// A whole, valid file of another identity planted inside ours (e.g. copied by hand) is mismatched.
TEST_F(ColdStoreTest, EntryOfAnotherIdentityInOurDirectoryIsDeleted) {
  std::string foreign_path;
  {
    auto other = Open(0, "model-b");
    Put(*other, "ns", Tokens(5), 1);
    foreign_path = other->Find(Tokens(6), "ns")->path;
  }
  std::vector<uint8_t> bytes = *env_.ReadFile(foreign_path);
  std::string planted = "/cache/model-a" + foreign_path.substr(std::string("/cache/model-b").size());
  ASSERT_TRUE(env_.CreateDirs(planted.substr(0, planted.find_last_of('/'))).ok());
  env_.PutDurableFile(planted, bytes);
  auto store = Open();
  EXPECT_EQ(store->counters().corrupt_deleted, 1u);
  EXPECT_EQ(store->entries(), 0u);
  EXPECT_FALSE(env_.FileSize(planted).ok());
  EXPECT_TRUE(env_.FileSize(foreign_path).ok());
}

TEST_F(ColdStoreTest, PutRejectsOtherGeometry) {
  auto store = Open();
  KvConfig c = SmallConfig();
  c.n_kv_head = 1;
  EXPECT_EQ(store->Put("ns", Tokens(3), MakeState(3, 1, c)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(env_.AllFiles().empty());
}

TEST_F(ColdStoreTest, RestoreIoErrorDeletesAndCounts) {
  auto store = Open();
  Put(*store, "ns", Tokens(5), 1);
  auto m = store->Find(Tokens(6), "ns");
  env_.set_read_error(true);
  EXPECT_EQ(store->Restore(*m).status().code(), StatusCode::kIoError);
  env_.set_read_error(false);
  EXPECT_EQ(store->counters().restore_failures, 1u);
  EXPECT_EQ(store->entries(), 0u);
  EXPECT_TRUE(EntryFiles().empty());
}

TEST_F(ColdStoreTest, DiskFullIsSoftAndLeavesNothingHalfWritten) {
  auto store = Open();
  Put(*store, "ns", Tokens(5, 100), 1);
  env_.set_write_budget(4000);
  KvState s = MakeState(5, 2);
  std::vector<int32_t> t = Tokens(5, 200);
  EXPECT_EQ(store->Put("ns", t, s).code(), StatusCode::kNoSpace);
  EXPECT_EQ(store->counters().spill_failures, 1u);
  EXPECT_EQ(store->counters().no_space, 1u);
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(env_.AllFiles().size(), 1u);  // the old entry only: no temp, no half file
  env_.clear_write_budget();
  EXPECT_TRUE(store->Put("ns", t, s).ok());  // serving (and spilling) continues
  EXPECT_EQ(store->entries(), 2u);
}

// The directory fsync fails after the rename made the new file visible: the store removes it, so the
// index and the disk agree, and the caller sees the error.
TEST_F(ColdStoreTest, DirectorySyncFailureLeavesIndexAndDiskInAgreement) {
  auto store = Open();
  Put(*store, "ns", Tokens(5, 100), 1);
  env_.set_dir_sync_error(true);
  EXPECT_EQ(store->Put("ns", Tokens(5, 200), MakeState(5, 2)).code(), StatusCode::kIoError);
  env_.set_dir_sync_error(false);
  EXPECT_EQ(store->counters().spill_failures, 1u);
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(EntryFiles().size(), 1u);
  EXPECT_FALSE(store->Find(Tokens(6, 200), "ns").has_value());
}

TEST_F(ColdStoreTest, CrashDuringPutThenRestartServesOnlyWholeEntries) {
  for (int64_t n = 1; n <= 8; ++n) {
    FaultInjectionEnv env;
    ColdStoreOptions o{kRoot, "model-a", SmallConfig(), 0, true};
    {
      auto store = std::move(ColdStore::Open(env, o)).value();
      ASSERT_TRUE(store->Put("ns", Tokens(4), MakeState(4, 1)).ok());
      env.set_crash_after(n);
      (void)store->Put("ns", Tokens(9), MakeState(9, 2));
    }
    env.PowerLoss();
    auto store = std::move(ColdStore::Open(env, o)).value();
    EXPECT_EQ(store->counters().corrupt_deleted, 0u) << n;
    auto m = store->Find(Tokens(20), "ns");
    ASSERT_TRUE(m.has_value()) << n;
    auto r = store->Restore(*m);
    ASSERT_TRUE(r.ok()) << n << ": " << r.status().ToString();
    int tag = m->entry_tokens == 9 ? 2 : 1;
    EXPECT_EQ(Bytes(*r), Bytes(MakeState(m->entry_tokens, tag))) << n;
  }
}

TEST_F(ColdStoreTest, RejectsBadIdentity) {
  for (const char* id : {"", ".", "..", "a/b"}) {
    auto s = ColdStore::Open(env_, ColdStoreOptions{kRoot, id, SmallConfig(), 0, true});
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << id;
  }
}

TEST(ColdStorePosixTest, RoundTripOnRealFileSystem) {
  char tmpl[] = "/tmp/ember_cold_test_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  ColdStoreOptions o{root, "model-a", SmallConfig(), 0, true};
  {
    auto store = std::move(ColdStore::Open(*PosixEnv::Default(), o)).value();
    ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 4)).ok());
  }
  auto store = std::move(ColdStore::Open(*PosixEnv::Default(), o)).value();
  EXPECT_EQ(store->entries(), 1u);
  auto r = store->Restore(*store->Find(Tokens(7), "ns"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Bytes(*r), Bytes(std::move(MakeState(7, 4).View(6)).value()));
  EXPECT_EQ(std::system(("rm -rf '" + root + "'").c_str()), 0);
}

}  // namespace
}  // namespace ember
