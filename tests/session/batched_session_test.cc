// BatchedSession on the real engine and a tiny generated model: concurrent requests through one
// BatchRunner give bitwise the tokens of solo CachedSession runs (greedy and seeded sampling);
// cached_tokens counts exactly the positions a request did not compute (cache + in-flight sharing); a
// shared in-flight prefix is prefilled once; the prompt-boundary and reply entries reach the cache; a
// cancelled request leaves the others' output unchanged.
#include "session/batched_session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "session/cached_session.h"
#include "session/kv_budget.h"
#include "session/run_together.h"
#include "session/session_test_util.h"
#include "support/poll.h"

namespace ember {
namespace {

class BatchedSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("ember_batched_session_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    engine_ = session_test::GenerateAndLoad((dir_ / "tiny.gguf").string(),
                                            "--n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32",
                                            KvDtype::kF32, /*load_tokenizer=*/true);
  }
  static void TearDownTestSuite() {
    delete engine_;
    std::filesystem::remove_all(dir_);
  }

  static std::vector<int32_t> Ids(size_t n, uint32_t seed) { return session_test::PseudoIds(n, seed, 100, 20000); }
  static std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    return session_test::Cat(std::move(a), b);
  }
  // Request i: greedy when even, seeded sampling with a repetition penalty when odd.
  static SessionRequest Req(std::vector<int32_t> prompt, int i, int max_tokens = 10) {
    SessionRequest r = session_test::GreedyRequest(std::move(prompt), max_tokens);
    if (i % 2 == 1) {
      r.generate.sampling.temperature = 0.9f;
      r.generate.sampling.seed = 1000 + static_cast<uint64_t>(i);
      r.generate.sampling.repeat_penalty = 1.1f;
    }
    return r;
  }
  // The reference: the request alone through CachedSession, without a cache.
  static std::vector<int32_t> Solo(const SessionRequest& req) {
    CachedSession s(*engine_, nullptr);
    auto r = s.Generate(req, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->gen.tokens : std::vector<int32_t>{};
  }
  // Runs every request on its own thread at once; results in request order.
  static std::vector<StatusOr<SessionResult>> RunAll(BatchedSession& s, const std::vector<SessionRequest>& reqs) {
    std::vector<StatusOr<SessionResult>> out(reqs.size(), Internal("not run"));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < reqs.size(); ++i) threads.emplace_back([&, i] { out[i] = s.Generate(reqs[i], nullptr); });
    for (auto& t : threads) t.join();
    return out;
  }

  PromptCache cache_{PromptCacheOptions{size_t{1} << 30, nullptr}};
  static inline Engine* engine_ = nullptr;
  static inline std::filesystem::path dir_;
};

using session_test::RunTogether;

TEST_F(BatchedSessionTest, ConcurrentRequestsGiveTheTokensOfSoloRuns) {
  std::vector<SessionRequest> reqs;
  for (int i = 0; i < 7; ++i) reqs.push_back(Req(Ids(20 + 37 * static_cast<size_t>(i), 50 + static_cast<uint32_t>(i)), i));
  std::vector<std::vector<int32_t>> solo;
  for (const auto& r : reqs) solo.push_back(Solo(r));
  BatchRunnerOptions bo;
  bo.max_seqs = 4;  // seven requests: some wait for a slot
  bo.step_tokens = 48;
  BatchRunner runner(*engine_, bo);
  BatchedSession s(*engine_, runner, &cache_);
  auto out = RunAll(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << i << ": " << out[i].status().ToString();
    EXPECT_EQ(out[i]->gen.tokens, solo[i]) << "request " << i;
    EXPECT_EQ(out[i]->cached_tokens, 0) << i;  // distinct prompts, an empty cache
    EXPECT_EQ(out[i]->prefilled_tokens, static_cast<int64_t>(reqs[i].prompt.size())) << i;
    EXPECT_EQ(out[i]->tier, "none");
  }
  EXPECT_GE(runner.stats().steps, 1u);
  EXPECT_EQ(runner.stats().completed, reqs.size());
}

// A follow-up turn adopts the previous reply's entry: cached_tokens is that entry's length, exactly the
// positions it did not prefill, and its tokens are still the cold run's.
TEST_F(BatchedSessionTest, CachedTokensAreExactlyThePositionsNotComputed) {
  BatchRunner runner(*engine_, BatchRunnerOptions{});
  BatchedSession s(*engine_, runner, &cache_);
  std::vector<SessionRequest> turn1 = {Req(Ids(120, 1), 0), Req(Ids(90, 2), 1)};
  auto r1 = RunAll(s, turn1);
  std::vector<SessionRequest> turn2;
  for (size_t i = 0; i < turn1.size(); ++i) {
    ASSERT_TRUE(r1[i].ok());
    EXPECT_EQ(r1[i]->entry_tokens, static_cast<int64_t>(turn1[i].prompt.size() + r1[i]->gen.tokens.size()) - 1);
    turn2.push_back(Req(Cat(Cat(turn1[i].prompt, r1[i]->gen.tokens), Ids(15, 10 + static_cast<uint32_t>(i))),
                        static_cast<int>(i)));
  }
  auto r2 = RunAll(s, turn2);
  for (size_t i = 0; i < turn2.size(); ++i) {
    ASSERT_TRUE(r2[i].ok());
    EXPECT_EQ(r2[i]->cached_tokens, r1[i]->entry_tokens) << i;
    EXPECT_EQ(r2[i]->tier, "ram");
    EXPECT_EQ(r2[i]->cached_tokens + r2[i]->prefilled_tokens, static_cast<int64_t>(turn2[i].prompt.size())) << i;
    EXPECT_EQ(r2[i]->gen.tokens, Solo(turn2[i])) << i;
  }
}

// Two requests arriving together with a common 300-token prefix: the prefix is prefilled once (the
// second adopts the first's in-flight KV), both replies equal their solo runs, cached_tokens counts the
// shared positions, and each request's prompt-boundary and reply entries reach the cache.
TEST_F(BatchedSessionTest, ASharedInFlightPrefixIsPrefilledOnce) {
  const auto prefix = Ids(300, 7);
  std::vector<SessionRequest> reqs = {Req(Cat(prefix, Ids(20, 8)), 0), Req(Cat(prefix, Ids(24, 9)), 1)};
  BatchRunnerOptions bo;
  bo.step_tokens = 64;
  BatchRunner runner(*engine_, bo);
  BatchedSession s(*engine_, runner, &cache_);
  auto out = RunTogether(s, runner, reqs);
  ASSERT_TRUE(out[0].ok()) << out[0].status().ToString();
  ASSERT_TRUE(out[1].ok()) << out[1].status().ToString();
  EXPECT_EQ(out[0]->prefilled_tokens + out[1]->prefilled_tokens, 300 + 20 + 24);
  EXPECT_EQ(out[0]->cached_tokens, 0);
  EXPECT_EQ(out[1]->shared_tokens, 300);
  EXPECT_EQ(out[1]->cached_tokens, 300);
  EXPECT_EQ(out[1]->tier, "ram");  // another lane's KV
  EXPECT_EQ(runner.stats().shared_tokens, 300u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i]->gen.tokens, Solo(reqs[i])) << i;
    // Both ran >= 256 tokens that the cache did not give them: both stored a boundary entry at L - 1,
    // which the reply entry (prompt + generated, fully trimmable) then superseded.
    EXPECT_TRUE(out[i]->snapshot_stored) << i;
    auto reply = Cat(reqs[i].prompt, out[i]->gen.tokens);
    reply.pop_back();  // the last token is sampled, never forwarded
    EXPECT_EQ(out[i]->entry_tokens, static_cast<int64_t>(reply.size()));
    EXPECT_NE(cache_.FindExact(reply, ""), nullptr) << i;
  }
  const PromptCacheStats cs = cache_.stats();
  EXPECT_EQ(cs.inserts, 2u + 2u + 1u);  // two boundaries, two replies, the blocker's reply
  EXPECT_EQ(cs.superseded, 2u);
}

// The prompt-boundary entry is what a request with the same prompt and another continuation finds.
TEST_F(BatchedSessionTest, ThePromptBoundaryEntryServesTheSamePrompt) {
  BatchRunner runner(*engine_, BatchRunnerOptions{});
  CachedSessionOptions so;
  BatchedSession s(*engine_, runner, &cache_, so);
  const SessionRequest a = Req(Ids(280, 21), 0, 4);
  int64_t boundary_len = -1;
  // Look at the cache from the step thread right after the hook: the boundary entry is there then.
  auto r = s.Generate(a, [&](int32_t) {
    if (boundary_len < 0) {
      const std::vector<int32_t> head(a.prompt.begin(), a.prompt.end() - 1);
      boundary_len = cache_.FindExact(head, "") != nullptr ? static_cast<int64_t>(head.size()) : 0;
    }
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->snapshot_stored);
  EXPECT_EQ(boundary_len, 279);
  auto again = s.Generate(Req(a.prompt, 1, 4), nullptr);  // same prompt, sampled this time
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cached_tokens, 279);
  EXPECT_FALSE(again->snapshot_stored);  // only 1 token left to forward
  EXPECT_EQ(again->gen.tokens, Solo(Req(a.prompt, 1, 4)));
}

// Cancelling one request mid-batch: it ends as cancelled, the other's tokens are its solo tokens.
TEST_F(BatchedSessionTest, CancellingOneMidBatchLeavesTheOthersOutputUnchanged) {
  std::vector<SessionRequest> reqs = {Req(Ids(60, 31), 0, 24), Req(Ids(70, 32), 1, 24), Req(Ids(50, 33), 2, 24)};
  std::atomic<bool> cancel{false};
  reqs[1].generate.cancel = &cancel;
  std::vector<std::vector<int32_t>> solo = {Solo(reqs[0]), {}, Solo(reqs[2])};
  BatchRunner runner(*engine_, BatchRunnerOptions{});
  BatchedSession s(*engine_, runner, &cache_);
  std::vector<StatusOr<SessionResult>> out(3, Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      int n = 0;
      out[i] = s.Generate(reqs[i], [&, i](int32_t) {
        if (i == 1 && ++n == 3) cancel = true;  // the client leaves after three tokens
        return true;
      });
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(out[1].ok());
  EXPECT_EQ(out[1]->gen.stop, StopReason::kCancelled);
  EXPECT_EQ(out[1]->gen.tokens.size(), 3u);
  for (size_t i : {size_t{0}, size_t{2}}) {
    ASSERT_TRUE(out[i].ok());
    EXPECT_EQ(out[i]->gen.tokens, solo[i]) << i;
    EXPECT_EQ(out[i]->gen.stop, StopReason::kLength);
  }
  EXPECT_EQ(runner.stats().cancelled, 1u);
}

// Bypassed tokens (image placeholders) neither share in flight nor touch the cache.
TEST_F(BatchedSessionTest, BypassedRequestsShareNothing) {
  const auto prefix = Ids(200, 41);
  std::vector<SessionRequest> reqs = {Req(Cat(prefix, Ids(10, 42)), 0), Req(Cat(prefix, Ids(10, 43)), 0)};
  for (auto& r : reqs) r.bypass_cache = true;
  BatchRunner runner(*engine_, BatchRunnerOptions{});
  BatchedSession s(*engine_, runner, &cache_);
  auto out = RunTogether(s, runner, reqs);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(out[i].ok());
    EXPECT_EQ(out[i]->cached_tokens, 0);
    EXPECT_EQ(out[i]->prefilled_tokens, 210);
  }
  EXPECT_EQ(runner.stats().shared_tokens, 0u);
  EXPECT_EQ(cache_.stats().entries, 1u);  // the blocker's reply alone
  EXPECT_EQ(cache_.stats().bypassed, 2u);
}

// Tenants never share: the same prefix in two namespaces is computed by each.
TEST_F(BatchedSessionTest, DifferentNamespacesDoNotShareInFlight) {
  const auto prefix = Ids(200, 51);
  std::vector<SessionRequest> reqs = {Req(Cat(prefix, Ids(10, 52)), 0), Req(Cat(prefix, Ids(10, 53)), 0)};
  reqs[0].ns = "tenant-a";
  reqs[1].ns = "tenant-b";
  BatchRunner runner(*engine_, BatchRunnerOptions{});
  BatchedSession s(*engine_, runner, &cache_);
  auto out = RunTogether(s, runner, reqs);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(out[i].ok());
    EXPECT_EQ(out[i]->cached_tokens, 0) << i;
    EXPECT_EQ(out[i]->prefilled_tokens, 210) << i;
  }
  // The same namespace does.
  reqs[1].ns = "tenant-a";
  reqs[0].prompt = Cat(Ids(200, 54), Ids(10, 55));
  reqs[1].prompt = Cat(Ids(200, 54), Ids(10, 56));
  out = RunTogether(s, runner, reqs);
  ASSERT_TRUE(out[1].ok());
  EXPECT_EQ(out[1]->shared_tokens, 200);
}

// A KV budget with room for two of these requests at a time (and the RAM cache): the others wait for
// a reservation in the runner's queue, none is refused, the budget is never exceeded, and every reply is
// still its solo one.
TEST_F(BatchedSessionTest, ATinyKvBudgetMakesRequestsWaitNeverOvercommit) {
  TieredCacheOptions to;
  to.ram_bytes = 1 << 20;
  auto tiers = TieredCache::Open(std::move(to));
  ASSERT_TRUE(tiers.ok());
  const KvConfig kc = engine_->kv_config();
  const uint64_t per_pos = KvBytesPerPosition(kc);
  KvBudget budget(KvBudgetOptions{300 * per_pos, per_pos, kc.block_size}, tiers->get());
  ASSERT_TRUE(budget.CheckAdmissible(100, 10).ok());
  const Status never = budget.CheckAdmissible(250, 60);
  EXPECT_EQ(never.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(never.message().find("310 KV positions"), std::string::npos) << never.message();
  BatchRunnerOptions ro;  // 4 slots: the budget, not the slots, limits
  ro.kv_budget_bytes = static_cast<int64_t>(budget.budget_bytes());
  ro.kv_outside_bytes = [&budget] { return static_cast<int64_t>(budget.CacheBytes()); };
  BatchRunner runner(*engine_, ro);
  CachedSessionOptions so;
  so.budget = &budget;
  BatchedSession s(*engine_, runner, tiers->get(), so);
  std::vector<SessionRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(Req(Ids(100, 60 + static_cast<uint32_t>(i)), i));
  std::vector<StatusOr<SessionResult>> out(reqs.size(), Internal("not run"));
  std::atomic<bool> done{false};
  int peak = 0;
  int64_t peak_reserved = 0;
  std::thread watch([&] {  // the runner's own view, sampled while the requests run
    while (!done) {
      const BatchRunnerStats st = runner.stats();
      peak = std::max(peak, st.running);
      peak_reserved = std::max(peak_reserved, st.kv_reserved_bytes);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> threads;
  for (size_t i = 0; i < reqs.size(); ++i) {
    threads.emplace_back([&, i] { out[i] = s.Generate(reqs[i], nullptr); });
  }
  for (auto& t : threads) t.join();
  done = true;
  watch.join();
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << i << ": " << out[i].status().ToString();
    EXPECT_EQ(out[i]->gen.tokens, Solo(reqs[i])) << i;
  }
  EXPECT_LE(peak, 2);  // 142 positions each: two fit in 300
  EXPECT_GE(peak, 1);
  EXPECT_LE(peak_reserved, static_cast<int64_t>(budget.budget_bytes()));
  const BatchRunnerStats st = runner.stats();
  EXPECT_GT(st.admission_waits, 0u);
  EXPECT_EQ(st.kv_admitted, reqs.size());
  EXPECT_EQ(st.kv_reserved_bytes, 0);
  EXPECT_EQ(st.kv_reservations, 0);
  EXPECT_EQ(st.waiting_for_memory, 0);
}

}  // namespace
}  // namespace ember
