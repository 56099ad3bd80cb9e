// KvBudget (the budget's arithmetic; the batch runner admits): the 400 check names the numbers, a
// reservation counts what the request computes and is clamped to the budget, and the RAM cache is
// shrunk to the room the runner asks for.
#include "session/kv_budget.h"

#include <gtest/gtest.h>

#include "cache/kv_entry_state.h"
#include "coldtier/test_state.h"

namespace ember {
namespace {

using coldtier_test::MakeState;
using coldtier_test::Tokens;

constexpr uint64_t kPerPos = 512;

KvBudgetOptions Options(int64_t positions) {
  return KvBudgetOptions{static_cast<uint64_t>(positions) * kPerPos, kPerPos, 32};
}

TEST(KvBudgetTest, CheckAdmissibleRefusesWhatCouldNeverFitAndNamesTheNumbers) {
  KvBudget b(Options(100), nullptr);
  EXPECT_TRUE(b.CheckAdmissible(60, 40).ok());
  const Status st = b.CheckAdmissible(60, 50);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const char* part : {"110 KV positions", "60 prompt", "50 max_tokens", "56320 bytes", "51200 bytes", "--kv-budget"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << part << " in: " << st.message();
  }
}

// A hybrid's recurrent state is held whatever the length: once per sequence, also when all is cached.
TEST(KvBudgetTest, AHybridReservesItsRecurrentStateOncePerSequence) {
  KvBudgetOptions o = Options(200);
  o.bytes_per_sequence = 10 * kPerPos;
  KvBudget b(o, nullptr);
  EXPECT_EQ(b.ReservationBytes(100, 0, 20), 162 * kPerPos);
  EXPECT_EQ(b.ReservationBytes(100, 100, 0), 42 * kPerPos);
  EXPECT_TRUE(b.CheckAdmissible(150, 40).ok());                       // 190 positions + 10 = the budget
  EXPECT_EQ(b.CheckAdmissible(150, 41).code(), StatusCode::kInvalidArgument);  // one position over
}

TEST(KvBudgetTest, AReservationCountsWhatTheRequestComputesPlusOneBlock) {
  KvBudget b(Options(200), nullptr);
  EXPECT_EQ(b.ReservationBytes(100, 0, 20), 152 * kPerPos);  // 100 + 20 + one block of 32
  // Adopted positions are the cache's memory, counted in its resident bytes.
  EXPECT_EQ(b.ReservationBytes(100, 100, 20), 52 * kPerPos);
  EXPECT_EQ(b.ReservationBytes(100, 40, 20), 112 * kPerPos);
  EXPECT_EQ(b.ReservationBytes(10, 50, -5), 32 * kPerPos);  // nonsense counts as nothing, never negative
}

TEST(KvBudgetTest, AReservationIsClampedSoARequestThatFitsRunsOnceAlone) {
  KvBudget b(Options(100), nullptr);
  ASSERT_TRUE(b.CheckAdmissible(70, 30).ok());
  EXPECT_EQ(b.ReservationBytes(70, 0, 30), 100 * kPerPos);  // 132 positions with the block: the budget
}

// The lane's "make room": LRU entries are evicted (no cold tier) down to the bytes asked for, never
// below, and nothing happens when the cache already fits.
TEST(KvBudgetTest, ShrinkCacheToEvictsLeastRecentlyUsedEntriesDownToTheTarget) {
  TieredCacheOptions o;
  o.ram_bytes = 1 << 20;
  auto tiers = TieredCache::Open(std::move(o));
  ASSERT_TRUE(tiers.ok());
  const uint64_t per_pos = MakeState(8, 0).bytes() / 8;  // SmallConfig: 4-position blocks
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE((*tiers)->Insert(Tokens(64, 1000 * i), std::make_unique<KvEntryState>(MakeState(64, i)), "").ok());
  }
  const uint64_t cache = (*tiers)->ram().stats().bytes;
  ASSERT_EQ(cache, 4 * 64 * per_pos);
  KvBudget b(KvBudgetOptions{300 * per_pos, per_pos, 4}, tiers->get());
  EXPECT_EQ(b.CacheBytes(), cache);
  EXPECT_EQ(b.stats().cache_bytes, cache);
  b.ShrinkCacheTo(static_cast<int64_t>(cache));  // fits already: nothing to do
  EXPECT_EQ(b.stats().shrinks, 0u);
  EXPECT_EQ((*tiers)->ram().stats().entries, 4u);
  // Room for 176 positions beside a 124-position reservation: two 64-position entries must go.
  b.ShrinkCacheTo(static_cast<int64_t>((300 - 124) * per_pos));
  EXPECT_EQ((*tiers)->ram().stats().entries, 2u);
  EXPECT_EQ((*tiers)->ram().FindExact(Tokens(64, 0), ""), nullptr);  // the least recently used went first
  EXPECT_EQ(b.stats().shrinks, 1u);
  EXPECT_EQ((*tiers)->stats().shrink_freed, 2u);
  b.ShrinkCacheTo(-5);  // a negative room (reservations alone over the budget) empties it at most
  EXPECT_EQ((*tiers)->ram().stats().entries, 0u);
  EXPECT_EQ(b.stats().shrinks, 2u);
  EXPECT_EQ(b.CacheBytes(), 0u);
}

TEST(KvBudgetTest, ParsesMemAvailable) {
  EXPECT_EQ(ParseMemAvailable("MemTotal:       16384 kB\nMemFree:   100 kB\nMemAvailable:    8192 kB\n"),
            std::optional<uint64_t>(8192ull * 1024));
  EXPECT_EQ(ParseMemAvailable("MemTotal:       16384 kB\n"), std::nullopt);
  EXPECT_EQ(ParseMemAvailable("MemAvailable: lots\n"), std::nullopt);
  std::string how;
  const uint64_t d = DefaultKvBudgetBytes(uint64_t{1} << 20, &how);
  EXPECT_GE(d, uint64_t{64} << 20);
  EXPECT_NE(how.find("75%"), std::string::npos) << how;
}

}  // namespace
}  // namespace ember
