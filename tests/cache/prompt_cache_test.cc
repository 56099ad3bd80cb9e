// The RAM tier's rules (docs/cache-spec.md §2–3), one named test per rule, over test-only entry states.
#include "cache/prompt_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "cache/cache_namespace.h"
#include "cache/trim_rules.h"
#include "fake_state.h"
#include "support/sim_env.h"

namespace ember {
namespace {

using testing::FakeLayer;
using testing::FakeState;

// Token sequence 1, 2, ..., n (optionally with the last `tail` tokens changed to a branch value).
std::vector<int32_t> Seq(int n, int branch = 0, int tail = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), 1);
  for (int i = n - tail; i < n; ++i) t[static_cast<size_t>(i)] = 1000 * branch + i;
  return t;
}

PromptCache MakeCache(size_t cap, std::vector<std::vector<int32_t>>* spilled = nullptr) {
  PromptCacheOptions o;
  o.capacity_bytes = cap;
  if (spilled != nullptr) o.spill = [spilled](std::shared_ptr<const CacheEntry> e) { spilled->push_back(e->tokens); };
  return PromptCache(std::move(o));
}

void Put(PromptCache& c, const std::vector<int32_t>& t, const std::string& ns = "",
         std::vector<FakeLayer> layers = {{}}, int64_t mro = 0) {
  ASSERT_TRUE(c.Insert(t, FakeState::Make(static_cast<int64_t>(t.size()), layers, mro), ns).ok());
}

int64_t HitLen(PromptCache& c, const std::vector<int32_t>& prompt, const std::string& ns = "") {
  auto hit = c.Lookup(prompt, ns);
  EXPECT_TRUE(hit.ok());
  return hit.ok() ? hit->p : -1;
}

// §2.1 capacity in bytes; 0 = off.
TEST(PromptCacheRules, CapacityIsBytesAndZeroDisables) {
  PromptCache off = MakeCache(0);
  EXPECT_FALSE(off.enabled());
  Put(off, Seq(8));
  EXPECT_EQ(off.stats().entries, 0u);
  EXPECT_EQ(HitLen(off, Seq(9)), 0);
  EXPECT_EQ(off.stats().lookups, 0u);

  PromptCache c = MakeCache(500);  // 5 buffers of 100 bytes
  Put(c, Seq(8));                  // 2 buffers
  EXPECT_EQ(c.stats().bytes, 200u);
  EXPECT_EQ(c.stats().capacity, 500u);
}

// §2.1 an entry larger than the cap is not kept; spilled first when a cold tier exists.
TEST(PromptCacheRules, EntryLargerThanCapIsNotKeptButSpilled) {
  std::vector<std::vector<int32_t>> spilled;
  PromptCache c = MakeCache(300, &spilled);
  Put(c, Seq(4));
  Put(c, Seq(16, 1, 16));  // 400 bytes > 300
  EXPECT_EQ(c.stats().entries, 1u);
  EXPECT_EQ(c.stats().oversize, 1u);
  ASSERT_EQ(spilled.size(), 1u);
  EXPECT_EQ(spilled[0], Seq(16, 1, 16));
  PromptCache no_cold = MakeCache(300);
  Put(no_cold, Seq(16));
  EXPECT_EQ(no_cold.stats().entries, 0u);
  EXPECT_EQ(no_cold.stats().spills, 0u);
}

// §2.2 the longest usable prefix wins.
TEST(PromptCacheRules, LookupLongestUsablePrefixWins) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(6));
  Put(c, Seq(12, 1, 2));  // shares 10 with Seq(20)
  Put(c, Seq(9));
  EXPECT_EQ(HitLen(c, Seq(20)), 10);
}

// §2.2 ties keep the earlier candidate.
TEST(PromptCacheRules, LookupTiesKeepEarlierCandidate) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(10, 1, 2));  // both share 8 tokens with the prompt
  Put(c, Seq(10, 2, 2));
  auto hit = c.Lookup(Seq(20), "");
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->p, 8);
  // The earlier one was used: its recency was refreshed, so it is now the most recent.
  auto order = c.EntriesByRecency();
  EXPECT_EQ(order.back()->tokens, Seq(10, 1, 2));
}

// §1 usable prefix = min(LCP, len(P) - 1): an exact repeat is served as P[:-1] + 1 token.
TEST(PromptCacheRules, UsablePrefixLeavesOneTokenToForward) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(10));
  EXPECT_EQ(HitLen(c, Seq(10)), 9);
  EXPECT_EQ(HitLen(c, Seq(5)), 4);
}

// §2.2 p = 0 is a miss.
TEST(PromptCacheRules, ZeroPrefixIsMiss) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(10));
  auto hit = c.Lookup(std::vector<int32_t>{99, 1, 2}, "");
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->p, 0);
  EXPECT_EQ(hit->view, nullptr);
  EXPECT_EQ(HitLen(c, Seq(1)), 0);  // a one-token prompt can never hit
  EXPECT_EQ(c.stats().misses, 2u);
  EXPECT_EQ(c.stats().hits, 0u);
}

// §2.2 an entry needing a trim it cannot do is skipped (a shorter, trimmable one serves instead).
TEST(PromptCacheRules, LookupSkipsEntryNeedingImpossibleTrim) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(4));
  Put(c, Seq(12), "", {{StateKind::kRecurrent}});
  EXPECT_EQ(HitLen(c, Seq(8)), 4);                 // recurrent would need a trim 12 -> 7
  EXPECT_GE(c.stats().skipped_untrimmable, 1u);
  EXPECT_EQ(HitLen(c, Seq(20)), 12);               // exact boundary: usable without a trim
}

// §2.2 / §3.4 an entry whose min_reusable_offset > p is skipped.
TEST(PromptCacheRules, LookupSkipsEntryBelowMinReusableOffset) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(20), "", {{}}, /*mro=*/10);
  EXPECT_EQ(HitLen(c, Seq(8)), 0);
  EXPECT_EQ(HitLen(c, Seq(15)), 14);
}

// §2.3 lookup does not consume: the donor stays, shares its buffers with the view, recency refreshed.
TEST(PromptCacheRules, LookupDoesNotConsumeAndRefreshesRecency) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(8));
  Put(c, Seq(6, 1, 6));
  const auto donor = c.EntriesByRecency().front();
  ASSERT_EQ(donor->tokens, Seq(8));
  auto hit = c.Lookup(Seq(12), "");
  ASSERT_TRUE(hit.ok() && hit->view);
  EXPECT_EQ(hit->p, 8);
  EXPECT_EQ(c.stats().entries, 2u);
  EXPECT_EQ(c.EntriesByRecency().back()->tokens, Seq(8));
  const auto& d = dynamic_cast<const FakeState&>(*donor->state);
  EXPECT_EQ(d.use_count(0), 2);  // the entry's state and the view share the buffer
  auto hit2 = c.Lookup(Seq(12), "");
  ASSERT_TRUE(hit2.ok());
  EXPECT_EQ(hit2->p, 8);  // still there for the next request
}

// §2.4 an identical same-namespace entry is replaced; N repeats keep count and bytes constant.
TEST(PromptCacheRules, IdenticalEntryReplacedRepeatsDoNotGrow) {
  PromptCache c = MakeCache(1 << 20);
  for (int i = 0; i < 5; ++i) Put(c, Seq(10), "", {{StateKind::kWindow, 4, 4}});  // untrimmable ring
  EXPECT_EQ(c.stats().entries, 1u);
  EXPECT_EQ(c.stats().bytes, 300u);
  EXPECT_EQ(c.stats().replaced, 4u);
  Put(c, Seq(10), "other");
  EXPECT_EQ(c.stats().entries, 2u);  // another namespace is not a duplicate
}

// §2.4 supersede: a fully trimmable entry drops its same-ns strict prefixes, without spilling.
TEST(PromptCacheRules, TrimmableEntrySupersedesPrefixesWithoutSpill) {
  std::vector<std::vector<int32_t>> spilled;
  PromptCache c = MakeCache(1 << 20, &spilled);
  Put(c, Seq(4));
  Put(c, Seq(8));
  Put(c, Seq(6), "tenant-b");
  Put(c, Seq(7, 1, 2));  // not a prefix of Seq(12)
  Put(c, Seq(12));
  EXPECT_EQ(c.stats().superseded, 2u);
  EXPECT_EQ(c.stats().entries, 3u);
  EXPECT_TRUE(spilled.empty());
  EXPECT_EQ(HitLen(c, Seq(5)), 4);  // served by the superseding entry
}

// §2.4 an untrimmable new entry keeps all its ancestors (a ring that wrapped; a recurrent state).
TEST(PromptCacheRules, UntrimmableEntryKeepsAncestors) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(4), "", {{StateKind::kWindow, 4, 6}});
  Put(c, Seq(9), "", {{StateKind::kWindow, 4, 6}});   // ring of 6 over 9 positions: wrapped, holds [3, 9)
  Put(c, Seq(11), "", {{StateKind::kFull}, {StateKind::kRecurrent}});
  EXPECT_EQ(c.stats().superseded, 0u);
  EXPECT_EQ(c.stats().entries, 3u);
  EXPECT_EQ(HitLen(c, Seq(6, 1, 1)), 4);  // the ancestor still serves a drifted next turn
}

// §2.4 / §3.4 supersede spares prefixes shorter than the new entry's min_reusable_offset.
TEST(PromptCacheRules, SupersedeHonoursMinReusableOffset) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(8));
  Put(c, Seq(4));  // a prefix of an existing entry: nothing supersedes it
  Put(c, Seq(12), "", {{}}, /*mro=*/6);
  EXPECT_EQ(c.stats().superseded, 1u);  // Seq(8) dropped, Seq(4) kept (the new entry cannot serve 4)
  EXPECT_EQ(HitLen(c, Seq(5)), 4);
}

// §2.4 LRU eviction under a tight cap, each victim spilled, oldest-used first.
TEST(PromptCacheRules, EvictsLeastRecentlyUsedAndSpillsEach) {
  std::vector<std::vector<int32_t>> spilled;
  PromptCache c = MakeCache(600, &spilled);  // three 2-buffer entries fit
  const auto a = Seq(8, 1, 8), b = Seq(8, 2, 8), d = Seq(8, 3, 8), e = Seq(8, 4, 8), f = Seq(8, 5, 8);
  Put(c, a);
  Put(c, b);
  Put(c, d);
  EXPECT_EQ(HitLen(c, a), 7);  // a is now the most recent: b is the LRU
  Put(c, e);
  Put(c, f);
  ASSERT_EQ(spilled.size(), 2u);
  EXPECT_EQ(spilled[0], b);
  EXPECT_EQ(spilled[1], d);
  EXPECT_EQ(c.stats().evictions, 2u);
  EXPECT_EQ(c.stats().spills, 2u);
  EXPECT_LE(c.stats().bytes, 600u);
}

// §2.4 the fresh entry is never the victim, even when it alone nearly fills the cap.
TEST(PromptCacheRules, FreshEntryIsNeverEvicted) {
  PromptCache c = MakeCache(500);
  Put(c, Seq(8, 1, 8));
  Put(c, Seq(20, 2, 20));  // 500 bytes: everything else must go
  ASSERT_EQ(c.stats().entries, 1u);
  EXPECT_EQ(c.EntriesByRecency()[0]->tokens, Seq(20, 2, 20));
}

// §2.6 clear() never spills.
TEST(PromptCacheRules, ClearNeverSpills) {
  std::vector<std::vector<int32_t>> spilled;
  PromptCache c = MakeCache(1 << 20, &spilled);
  Put(c, Seq(8));
  Put(c, Seq(8, 1, 3));
  c.Clear();
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_EQ(c.stats().bytes, 0u);
  EXPECT_TRUE(spilled.empty());
}

// §1 namespaces: nothing under one seeds another — adapter (id, weights hash, scale, order) and salt.
TEST(PromptCacheRules, NamespacesIsolateAdaptersAndSalts) {
  CacheNamespace base, salted, lora, lora_other_weights, lora_other_scale, two, two_swapped;
  salted.tenant = "user-42";
  lora.adapters = {{"math", 7, 1.0f}};
  lora_other_weights.adapters = {{"math", 8, 1.0f}};
  lora_other_scale.adapters = {{"math", 7, 0.5f}};
  two.adapters = {{"a", 1, 1.0f}, {"b", 2, 1.0f}};
  two_swapped.adapters = {{"b", 2, 1.0f}, {"a", 1, 1.0f}};
  const std::vector<CacheNamespace> all = {base, salted, lora, lora_other_weights, lora_other_scale, two,
                                           two_swapped};
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(10), lora.Key());
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) EXPECT_EQ(all[i].Key() == all[j].Key(), i == j) << i << " " << j;
    EXPECT_EQ(HitLen(c, Seq(12), all[i].Key()), i == 2 ? 10 : 0) << i;
  }
  // A tenant salt that looks like an adapter field cannot collide with one.
  CacheNamespace tricky;
  tricky.tenant = lora.Key();
  EXPECT_NE(tricky.Key(), lora.Key());
}

// §3.5 an unknown state kind is an error, never a fallback.
TEST(PromptCacheRules, UnknownStateKindIsAnError) {
  PromptCache c = MakeCache(1 << 20);
  auto s = FakeState::Make(8, {{}, {static_cast<StateKind>(9)}});
  EXPECT_FALSE(CanServeAt(*s, 8).ok());
  EXPECT_FALSE(FullyTrimmable(*s).ok());
  Status st = c.Insert(Seq(8), std::move(s), "");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.stats().entries, 0u);
}

// Insert validates that the state holds exactly the tokens.
TEST(PromptCacheRules, InsertRejectsTokenStateMismatch) {
  PromptCache c = MakeCache(1 << 20);
  EXPECT_FALSE(c.Insert(Seq(8), FakeState::Make(7), "").ok());
  EXPECT_FALSE(c.Insert(Seq(8), nullptr, "").ok());
  EXPECT_EQ(c.stats().entries, 0u);
}

// §3.1 full attention: trimmable to any offset.
TEST(TrimRules, FullAttentionTrimsAnywhere) {
  auto s = FakeState::Make(16);
  for (int p = 0; p <= 16; ++p) EXPECT_TRUE(*CanServeAt(*s, p)) << p;
  EXPECT_FALSE(*CanServeAt(*s, 17));
  EXPECT_TRUE(*FullyTrimmable(*s));
}

// §3.2 sliding window: trim only while the positions [p - W, p) are still held.
TEST(TrimRules, RingRefusesTrimAfterWrap) {
  auto ring = FakeState::Make(20, {{StateKind::kWindow, /*window=*/4, /*ring=*/8}});  // holds [12, 20)
  EXPECT_TRUE(*CanServeAt(*ring, 20));
  EXPECT_TRUE(*CanServeAt(*ring, 16));   // needs [12, 16)
  EXPECT_FALSE(*CanServeAt(*ring, 15));  // needs 11
  EXPECT_FALSE(*FullyTrimmable(*ring));
  auto unwrapped = FakeState::Make(6, {{StateKind::kWindow, 4, 8}});
  EXPECT_TRUE(*CanServeAt(*unwrapped, 1));
  EXPECT_TRUE(*FullyTrimmable(*unwrapped));
  auto margin = FakeState::Make(20, {{StateKind::kWindow, 4, 0}});  // block design keeping everything
  EXPECT_TRUE(*CanServeAt(*margin, 3));
}

// §3.3 recurrent: never trimmable; reusable only at its exact boundary.
TEST(TrimRules, RecurrentOnlyAtExactBoundary) {
  auto s = FakeState::Make(10, {{StateKind::kFull}, {StateKind::kRecurrent}});
  EXPECT_TRUE(*CanServeAt(*s, 10));
  EXPECT_FALSE(*CanServeAt(*s, 9));
  EXPECT_FALSE(*CanServeAt(*s, 1));
  EXPECT_FALSE(*FullyTrimmable(*s));
}

// Byte accounting: buffers shared by several entries are charged once; evicting one frees only its own.
TEST(PromptCacheRules, SharedBuffersAreChargedOnce) {
  PromptCache c = MakeCache(1 << 20);
  auto base = FakeState::Make(8);
  auto view = base->View(8);
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(c.Insert(Seq(8), std::move(base), "").ok());
  // A sibling conversation grown from a view of the first: shares its 2 buffers, adds 2.
  ASSERT_TRUE(c.Insert(Seq(16, 1, 16), FakeState::Extend(**view, 16), "").ok());
  EXPECT_EQ(c.stats().entries, 2u);
  EXPECT_EQ(c.stats().bytes, 400u);  // not 200 + 400
}

// §2.7 bypass: counted, recomputed, never looked up.
TEST(PromptCacheRules, BypassIsCountedAsRecomputed) {
  PromptCache c = MakeCache(1 << 20);
  c.NoteBypass(30);
  EXPECT_EQ(c.stats().bypassed, 1u);
  EXPECT_EQ(c.stats().tokens_recomputed, 30u);
  EXPECT_EQ(c.stats().lookups, 0u);
}

// §5 counters: tokens served and recomputed add up to the prompt tokens looked up.
TEST(PromptCacheRules, CountersAddUp) {
  PromptCache c = MakeCache(1 << 20);
  Put(c, Seq(10));
  EXPECT_EQ(HitLen(c, Seq(15)), 10);
  EXPECT_EQ(HitLen(c, Seq(3, 1, 3)), 0);
  const PromptCacheStats s = c.stats();
  EXPECT_EQ(s.lookups, 2u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.tokens_served, 10u);
  EXPECT_EQ(s.tokens_recomputed, 5u + 3u);
  EXPECT_EQ(s.inserts, 1u);
}

// The spill hook runs outside the cache's mutex: it may call back into the cache.
TEST(PromptCacheRules, SpillHookMayReenterTheCache) {
  PromptCacheOptions o;
  o.capacity_bytes = 200;
  PromptCache* self = nullptr;
  size_t seen_entries = 99;
  o.spill = [&](std::shared_ptr<const CacheEntry>) { seen_entries = self->stats().entries; };
  PromptCache c(std::move(o));
  self = &c;
  Put(c, Seq(8, 1, 8));
  Put(c, Seq(8, 2, 8));
  EXPECT_EQ(seen_entries, 1u);
}

// Last-use times (what idle demotion asks IdleSince about) come from the Env's clock: an insert and a
// lookup hit stamp the simulated time, exactly.
TEST(PromptCacheRules, LastUseIsStampedOnTheEnvClock) {
  constexpr int64_t kSecond = 1'000'000;
  testing::SimEnv clock;
  PromptCacheOptions o;
  o.capacity_bytes = 1 << 20;
  o.env = &clock;
  PromptCache c(std::move(o));
  const int64_t t0 = clock.MonotonicMicros();
  Put(c, Seq(8, 1, 8));
  clock.Advance(10 * kSecond);
  Put(c, Seq(8, 2, 8));
  EXPECT_EQ(c.NowMicros(), t0 + 10 * kSecond);
  EXPECT_TRUE(c.IdleSince(t0 - 1).empty());
  const auto idle = c.IdleSince(t0);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0]->tokens, Seq(8, 1, 8));
  EXPECT_EQ(c.IdleSince(t0 + 10 * kSecond).size(), 2u);
  clock.Advance(5 * kSecond);
  std::vector<int32_t> prompt = Seq(8, 1, 8);
  prompt.push_back(7777);
  EXPECT_EQ(HitLen(c, prompt), 8);  // used again at t0 + 15 s
  const auto still_idle = c.IdleSince(t0 + 10 * kSecond);
  ASSERT_EQ(still_idle.size(), 1u);
  EXPECT_EQ(still_idle[0]->tokens, Seq(8, 2, 8));
  const auto first = c.IdleSince(t0 + 15 * kSecond).back();
  EXPECT_EQ(first->tokens, Seq(8, 1, 8));  // oldest-used first: the re-used one is last
  EXPECT_FALSE(c.Remove(first.get(), t0 + 10 * kSecond));  // used after that cutoff: it stays
}

// Lookups, inserts and eviction from many threads keep the invariant (bytes <= cap, views usable).
TEST(PromptCacheRules, ConcurrentLookupsAndInsertsKeepInvariant) {
  PromptCache c = MakeCache(2000);
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const auto prompt = Seq(8 + (i % 16), t, i % 3);
        auto hit = c.Lookup(prompt, "");
        if (hit.ok() && hit->p > 0) {
          ++hits;
          if (hit->view->n_pos() != hit->p) std::abort();
        }
        (void)c.Insert(prompt, FakeState::Make(static_cast<int64_t>(prompt.size())), "");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(c.stats().bytes, 2000u);
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(c.stats().lookups, 1200u);
}

}  // namespace
}  // namespace ember
