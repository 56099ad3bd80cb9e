// KvBudget (memory admission): the 400 check names the numbers, a reservation that does not fit waits
// (null) until one is released or shrunk, the RAM cache is shrunk before a request is deferred, and a
// request that fits the budget at all is admitted once it is alone.
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

TEST(KvBudgetTest, AReservationThatDoesNotFitWaitsUntilRoomIsReleased) {
  KvBudget b(Options(200), nullptr);
  auto a = b.TryReserve(100, 20);  // 100 + 20 + one block of 32
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->bytes(), 152 * kPerPos);
  EXPECT_EQ(b.TryReserve(50, 10), nullptr);  // 92 more positions: over 200
  EXPECT_EQ(b.stats().deferred, 1u);
  a->NoteCached(100);  // the lookup found 100 positions: they are the cache's memory
  EXPECT_EQ(a->bytes(), 52 * kPerPos);
  a->NoteCached(10);  // never grows back
  EXPECT_EQ(a->bytes(), 52 * kPerPos);
  auto c = b.TryReserve(50, 10);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(b.stats().reserved_bytes, (52 + 92) * kPerPos);
  EXPECT_EQ(b.stats().live, 2u);
  a.reset();
  c.reset();
  EXPECT_EQ(b.stats().reserved_bytes, 0u);
  EXPECT_EQ(b.stats().live, 0u);
  EXPECT_EQ(b.stats().admitted, 2u);
}

TEST(KvBudgetTest, ARequestThatFitsTheBudgetRunsOnceAlone) {
  KvBudget b(Options(100), nullptr);
  ASSERT_TRUE(b.CheckAdmissible(70, 30).ok());
  auto a = b.TryReserve(70, 30);  // 132 positions with the block: clamped to the budget
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->bytes(), 100 * kPerPos);
  EXPECT_EQ(b.TryReserve(1, 1), nullptr);
}

// The RAM cache's residency counts: when a reservation does not fit beside it, LRU entries are evicted
// (no cold tier) until it does, and only then would the request wait.
TEST(KvBudgetTest, TheRamCacheIsShrunkBeforeARequestWaits) {
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
  EXPECT_EQ(b.stats().cache_bytes, cache);
  // 100 + 20 + 4 = 124 positions beside 256 cached: over 300, so two 64-position entries must go.
  auto a = b.TryReserve(100, 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*tiers)->ram().stats().entries, 2u);
  EXPECT_EQ((*tiers)->ram().FindExact(Tokens(64, 0), ""), nullptr);  // the least recently used went first
  EXPECT_EQ(b.stats().shrinks, 1u);
  EXPECT_EQ((*tiers)->stats().shrink_freed, 2u);
  // 124 live + 224 more is over 300 whatever the cache holds: wait, without shrinking it for nothing.
  EXPECT_EQ(b.TryReserve(200, 20), nullptr);
  EXPECT_EQ((*tiers)->ram().stats().entries, 2u);
  a.reset();
  // Alone it fits once one more entry goes (300 - 224 leaves room for 76 cached positions).
  EXPECT_NE(b.TryReserve(200, 20), nullptr);
  EXPECT_EQ((*tiers)->ram().stats().entries, 1u);
  EXPECT_EQ(b.stats().shrinks, 2u);
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
