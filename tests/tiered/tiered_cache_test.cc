// RAM + SSD composition (spec §4.5-4.10) over an in-memory FaultInjectionEnv and a simulated clock
// (SimEnv wrapping it):
// write-behind debounce, spill, strictly-longer rule, idle demotion after durability, pressure relief,
// flush durability across a power cut, restore failures, disk full, restore-or-recompute.
#include "tiered/tiered_cache.h"

#include <gtest/gtest.h>

#include "cache/kv_entry_state.h"
#include "support/fault_injection_env.h"
#include "coldtier/test_state.h"
#include "support/sim_env.h"
#include "util/env_wrapper.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::MakeState;
using coldtier_test::SmallConfig;
using coldtier_test::Tokens;

constexpr int64_t kSecond = 1'000'000;

// A disk whose reads take simulated time: us_per_byte microseconds per byte read, however the reads
// are chunked, so a restore's duration (and the bandwidth measured from it) is known exactly.
class SlowReads : public EnvWrapper {
 public:
  explicit SlowReads(testing::SimEnv* sim) : EnvWrapper(sim), sim_(sim) {}
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    StatusOr<std::vector<uint8_t>> r = target()->ReadFile(path);
    if (r.ok()) Charge(r->size());
    return r;
  }
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override {
    Charge(n);
    return target()->ReadRange(path, offset, n, out);
  }
  int64_t us_per_byte = 0;
  uint64_t bytes_read = 0;

 private:
  void Charge(size_t n) {
    bytes_read += n;
    sim_->Advance(static_cast<int64_t>(n) * us_per_byte);
  }
  testing::SimEnv* sim_;
};

class TieredCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<TieredCache> Open(size_t ram_bytes = 1 << 20, double demote_idle_s = 0) {
    TieredCacheOptions o;
    o.ram_bytes = ram_bytes;
    o.env = &disk_;
    o.root = "/ssd";
    o.identity = "model-a";
    o.kv = SmallConfig();
    o.demote_idle_s = demote_idle_s;
    o.background = false;
    auto t = TieredCache::Open(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }
  static std::unique_ptr<EntryState> State(int64_t n, int tag) {
    return std::make_unique<KvEntryState>(MakeState(n, tag));
  }
  static size_t EntryBytes(int64_t n) { return MakeState(n, 0).bytes(); }
  size_t EntryFiles() {
    size_t n = 0;
    for (const std::string& f : env_.AllFiles()) n += f.size() > 6 && f.substr(f.size() - 6) == ".entry";
    return n;
  }
  FaultInjectionEnv env_;  // files (and faults)
  testing::SimEnv sim_{&env_};  // the clock the cache reads
  SlowReads disk_{&sim_};       // what the cache is given
};

TEST_F(TieredCacheTest, WriteBehindPersistsAfterTheDebounceOnlyWhatIsStillInRam) {
  auto t = Open();
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());
  t->Tick();
  EXPECT_EQ(EntryFiles(), 0u);  // not due yet
  sim_.Advance(kSecond / 2);
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());  // a re-insert restarts the debounce
  sim_.Advance(kSecond * 3 / 4);
  t->Tick();
  EXPECT_EQ(t->stats().write_behind_queued, 0u);
  sim_.Advance(kSecond / 2);
  t->Tick();
  EXPECT_EQ(t->stats().write_behind_queued, 1u);
  // An entry superseded before its debounce ends is not written: the longer one serves it.
  ASSERT_TRUE(t->Insert(Tokens(4, 500), State(4, 2), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(6, 500), State(6, 2), "").ok());
  sim_.Advance(2 * kSecond);
  t->Tick();
  ASSERT_TRUE(t->Flush().ok());
  EXPECT_EQ(EntryFiles(), 2u);
  const TieredStats s = t->stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_GT(s.last_flush_unix_s, 0);
}

TEST_F(TieredCacheTest, FlushedEntriesSurviveAPowerCutAndAreRestoredBitwise) {
  {
    auto t = Open();
    ASSERT_TRUE(t->Insert(Tokens(10), State(10, 3), "ns").ok());
    ASSERT_TRUE(t->Flush().ok());  // pending write-behinds are written by the flush itself
  }
  env_.PowerLoss();
  auto t = Open();
  EXPECT_EQ(t->stats().entries, 1u);
  ColdLookup c = t->LookupCold(Tokens(12), "ns", 0);
  ASSERT_EQ(c.decision, "restore");
  ASSERT_TRUE(c.state.has_value());
  EXPECT_EQ(c.p, 10);
  EXPECT_EQ(Bytes(*c.state), Bytes(MakeState(10, 3)));
  EXPECT_EQ(t->stats().tokens_served, 10u);
  EXPECT_EQ(t->stats().restore_ms.count, 1u);
  // Another namespace never sees it.
  EXPECT_EQ(t->LookupCold(Tokens(12), "other", 0).decision, "none");
}

TEST_F(TieredCacheTest, ColdEntryIsUsedOnlyIfStrictlyLongerThanTheRamCandidate) {
  auto t = Open();
  ASSERT_TRUE(t->Insert(Tokens(10), State(10, 3), "").ok());
  ASSERT_TRUE(t->Flush().ok());
  EXPECT_EQ(t->LookupCold(Tokens(12), "", 10).decision, "none");  // equal: RAM wins
  ColdLookup c = t->LookupCold(Tokens(12), "", 9);
  EXPECT_EQ(c.decision, "restore");
  EXPECT_EQ(c.p, 10);
  // The usable prefix rule: an exact repeat is served as P[:-1].
  ColdLookup exact = t->LookupCold(Tokens(10), "", 0);
  EXPECT_EQ(exact.p, 9);
  ASSERT_TRUE(exact.state.has_value());
  EXPECT_EQ(exact.state->n_pos(), 9);
}

TEST_F(TieredCacheTest, RamEvictionSpillsToSsd) {
  auto t = Open(EntryBytes(8) + EntryBytes(8) / 2);  // room for one entry
  ASSERT_TRUE(t->Insert(Tokens(8, 100), State(8, 1), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(8, 300), State(8, 2), "").ok());  // evicts the first: spilled
  EXPECT_EQ(t->ram().stats().entries, 1u);
  EXPECT_EQ(t->stats().spills_queued, 1u);
  ASSERT_TRUE(t->Flush().ok());
  ColdLookup c = t->LookupCold(Tokens(9, 100), "", 0);
  ASSERT_TRUE(c.state.has_value());
  EXPECT_EQ(Bytes(*c.state), Bytes(MakeState(8, 1)));
}

TEST_F(TieredCacheTest, IdleDemotionLeavesRamOnlyAfterTheFileIsDurable) {
  auto t = Open(1 << 20, /*demote_idle_s=*/300);
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());
  sim_.Advance(299 * kSecond);
  t->Tick();  // write-behind queued (due after 1 s) but not idle long enough
  ASSERT_TRUE(t->Flush().ok());
  EXPECT_EQ(t->ram().stats().entries, 1u);
  // A second entry that never reached disk: its demotion write fails, so it must stay in RAM.
  ASSERT_TRUE(t->Insert(Tokens(8, 700), State(8, 2), "").ok());
  sim_.Advance(2 * kSecond);  // past its debounce, but the debounced write fails too
  env_.set_sync_error(true);
  sim_.Advance(400 * kSecond);
  t->Tick();
  (void)t->Flush();
  EXPECT_EQ(t->stats().demotions, 1u);  // the durable one left RAM
  EXPECT_EQ(t->ram().stats().entries, 1u);
  ASSERT_TRUE(t->ram().FindExact(Tokens(8, 700), "") != nullptr);
  env_.set_sync_error(false);
  t->Tick();
  ASSERT_TRUE(t->Flush().ok());
  EXPECT_EQ(t->stats().demotions, 2u);
  EXPECT_EQ(t->ram().stats().entries, 0u);
  EXPECT_EQ(EntryFiles(), 2u);
}

TEST_F(TieredCacheTest, AnEntryUsedAfterItWasFoundIdleStaysInRam) {
  auto t = Open(1 << 20, 10);
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());
  ASSERT_TRUE(t->Flush().ok());
  sim_.Advance(20 * kSecond);
  ASSERT_EQ(t->ram().IdleSince(sim_.MonotonicMicros() - 10 * kSecond).size(), 1u);
  ASSERT_TRUE(t->ram().Lookup(Tokens(9), "").ok());  // used again
  t->Tick();
  EXPECT_EQ(t->ram().stats().entries, 1u);
  EXPECT_EQ(t->stats().demotions, 0u);
}

TEST_F(TieredCacheTest, PressureReliefWritesAndFreesLruEntriesUntilThePrefillFits) {
  const size_t e = EntryBytes(8);
  auto t = Open(3 * e);
  ASSERT_TRUE(t->Insert(Tokens(8, 100), State(8, 1), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(8, 300), State(8, 2), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(8, 500), State(8, 3), "").ok());
  ASSERT_TRUE(t->RelieveFor(e).ok());  // one entry's worth must go: the least recently used
  EXPECT_EQ(t->ram().stats().entries, 2u);
  EXPECT_EQ(t->stats().relief_writes, 1u);
  EXPECT_EQ(t->stats().relief_freed, 1u);
  EXPECT_EQ(t->ram().FindExact(Tokens(8, 100), ""), nullptr);
  EXPECT_EQ(EntryFiles(), 1u);  // written synchronously: durable before it left RAM
  // A failing write stops relief and the entry stays resident.
  env_.set_write_budget(0);
  EXPECT_FALSE(t->RelieveFor(3 * e).ok());
  EXPECT_EQ(t->ram().stats().entries, 2u);
  EXPECT_EQ(t->stats().relief_failures, 1u);
}

// The KV budget's demand: LRU entries leave RAM until it holds at most the target, written to SSD
// first (a demotion); a failed write does not keep an entry resident (memory outranks a future hit).
TEST_F(TieredCacheTest, ShrinkToDemotesLruEntriesUntilRamHoldsAtMostTheTarget) {
  const size_t e = EntryBytes(8);
  auto t = Open(4 * e);
  ASSERT_TRUE(t->Insert(Tokens(8, 100), State(8, 1), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(8, 300), State(8, 2), "").ok());
  ASSERT_TRUE(t->Insert(Tokens(8, 500), State(8, 3), "").ok());
  EXPECT_EQ(t->ShrinkTo(2 * e), 2 * e);
  EXPECT_EQ(t->ram().stats().entries, 2u);
  EXPECT_EQ(t->ram().FindExact(Tokens(8, 100), ""), nullptr);  // the least recently used went
  EXPECT_EQ(t->stats().shrink_freed, 1u);
  EXPECT_EQ(t->stats().relief_writes, 1u);
  EXPECT_EQ(EntryFiles(), 1u);  // durable before it left RAM
  EXPECT_EQ(t->LookupCold(Tokens(9, 100), "", 0).decision, "restore");
  env_.set_write_budget(0);
  EXPECT_EQ(t->ShrinkTo(0), 0u);
  EXPECT_EQ(t->ram().stats().entries, 0u);
  EXPECT_EQ(t->stats().relief_failures, 2u);
  EXPECT_EQ(t->stats().shrink_freed, 3u);
}

TEST_F(TieredCacheTest, DiskFullIsCountedAndEverythingElseKeepsWorking) {
  auto t = Open();
  env_.set_write_budget(0);
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());
  EXPECT_FALSE(t->Flush().ok());  // the flush says it could not make the entry durable
  const TieredStats s = t->stats();
  EXPECT_EQ(s.store.no_space, 1u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(t->LookupCold(Tokens(9), "", 0).decision, "none");
  auto hit = t->ram().Lookup(Tokens(9), "");  // RAM still serves
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->p, 8);
  env_.clear_write_budget();
  ASSERT_TRUE(t->Insert(Tokens(8), State(8, 1), "").ok());
  EXPECT_TRUE(t->Flush().ok());
  EXPECT_EQ(EntryFiles(), 1u);
}

TEST_F(TieredCacheTest, CorruptDataIsDetectedDeletedCountedAndTheLookupFallsBack) {
  {
    auto t = Open();
    ASSERT_TRUE(t->Insert(Tokens(10), State(10, 3), "").ok());
    ASSERT_TRUE(t->Flush().ok());
  }
  std::string file;
  for (const std::string& f : env_.AllFiles()) {
    if (f.size() > 6 && f.substr(f.size() - 6) == ".entry") file = f;
  }
  ASSERT_FALSE(file.empty());
  ASSERT_TRUE(env_.FlipByte(file, *env_.FileSize(file) - 3).ok());  // tensor data: the header still verifies
  auto t = Open();
  EXPECT_EQ(t->stats().entries, 1u);
  ColdLookup c = t->LookupCold(Tokens(12), "", 0);
  EXPECT_EQ(c.decision, "failed");
  EXPECT_FALSE(c.state.has_value());
  EXPECT_EQ(t->stats().store.restore_failures, 1u);
  EXPECT_EQ(EntryFiles(), 0u);
  EXPECT_EQ(t->LookupCold(Tokens(12), "", 0).decision, "none");
}

// The restore is timed on the Env's clock: with a 1 MB/s simulated disk its duration and the measured
// bandwidth are exact, and restore-or-recompute flips exactly where the estimates cross (spec §4.10).
TEST_F(TieredCacheTest, RestoreIsTimedOnTheEnvClockAndDecidesRestoreOrRecompute) {
  disk_.us_per_byte = 1;
  auto t = Open();
  ASSERT_TRUE(t->Insert(Tokens(10), State(10, 3), "").ok());
  ASSERT_TRUE(t->Flush().ok());
  const double file_bytes = static_cast<double>(t->stats().bytes);
  ASSERT_GT(file_bytes, 0);
  // No measurements: restore (which measures the read bandwidth).
  disk_.bytes_read = 0;
  const int64_t t0 = sim_.MonotonicMicros();
  ColdLookup first = t->LookupCold(Tokens(12), "", 0);
  EXPECT_EQ(first.decision, "restore");
  const double read_us = static_cast<double>(sim_.MonotonicMicros() - t0);
  EXPECT_EQ(read_us, static_cast<double>(disk_.bytes_read));  // the restore read and took simulated time
  EXPECT_DOUBLE_EQ(first.restore_ms, read_us / 1000);
  const double bw = t->stats().read_bytes_per_s;
  EXPECT_DOUBLE_EQ(bw, file_bytes / (read_us / 1e6));
  // 10 tokens to recompute vs file_bytes / bw seconds to read. A prefill twice as fast as the break-even
  // rate: recompute.
  const double restore_s = file_bytes / bw;
  const double breakeven_tps = 10 / restore_s;
  t->NotePrefill(1000, 1000 / (2 * breakeven_tps));
  ColdLookup c = t->LookupCold(Tokens(12), "", 0);
  EXPECT_EQ(c.decision, "recompute");
  EXPECT_FALSE(c.state.has_value());
  // Slower than break-even (the EWMA moves 30 % towards 0.4x: 0.7 * 2 + 0.3 * 0.4 = 1.52x, then
  // 0.7 * 1.52 + 0.3 * 0.4 = 1.184x, then 0.9488x): restore again on the third slow sample, not before.
  for (int i = 0; i < 2; ++i) t->NotePrefill(1000, 1000 / (0.4 * breakeven_tps));
  EXPECT_EQ(t->LookupCold(Tokens(12), "", 0).decision, "recompute");
  t->NotePrefill(1000, 1000 / (0.4 * breakeven_tps));
  EXPECT_EQ(t->LookupCold(Tokens(12), "", 0).decision, "restore");
  const TieredStats s = t->stats();
  EXPECT_EQ(s.restore_chosen, 2u);
  EXPECT_EQ(s.recompute_chosen, 2u);
}

TEST_F(TieredCacheTest, WithoutAColdTierItIsThePlainRamCache) {
  TieredCacheOptions o;
  o.ram_bytes = 1 << 20;
  auto t = TieredCache::Open(std::move(o));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->cold_enabled());
  ASSERT_TRUE((*t)->Insert(Tokens(8), State(8, 1), "").ok());
  EXPECT_EQ((*t)->LookupCold(Tokens(9), "", 0).decision, "none");
  EXPECT_TRUE((*t)->Flush().ok());
  EXPECT_TRUE((*t)->RelieveFor(1ull << 40).ok());
  EXPECT_EQ((*t)->ram().stats().entries, 1u);  // no cold tier: relief never drops data
  // The KV budget's shrink does: without a cold tier it evicts.
  EXPECT_EQ((*t)->ShrinkTo(0), 0u);
  EXPECT_EQ((*t)->ram().stats().entries, 0u);
  EXPECT_EQ((*t)->stats().shrink_freed, 1u);
  EXPECT_TRUE(env_.AllFiles().empty());
}

}  // namespace
}  // namespace ember
