// The cache in front of the real engine, on a tiny generated model: multi-turn reuse, bitwise equality
// of logits and tokens between a cache hit and a cold run (spec §6), exact entries, concurrency.
#include "session/cached_session.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <thread>

#include "cache/kv_entry_state.h"
#include "session/session_test_util.h"

namespace ember {
namespace {

class CachedSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("ember_cache_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string model = (dir_ / "tiny.gguf").string();
    engine_ = session_test::GenerateAndLoad(model, "--n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32",
                                            KvDtype::kF32, /*load_tokenizer=*/true);
  }
  static void TearDownTestSuite() {
    delete engine_;
    std::filesystem::remove_all(dir_);
  }

  // Deterministic ids in the ordinary-token range.
  static std::vector<int32_t> Ids(size_t n, uint32_t seed) { return session_test::PseudoIds(n, seed, 100, 20000); }
  static std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    return session_test::Cat(std::move(a), b);
  }
  static SessionRequest Req(std::vector<int32_t> prompt, int max_tokens = 8, std::string ns = "") {
    return session_test::GreedyRequest(std::move(prompt), max_tokens, std::move(ns));
  }
  static uint64_t Checksum(const KvState& kv) {
    VectorSink sink;
    EXPECT_TRUE(kv.Serialize(sink).ok());
    return XXH3_64bits(sink.bytes().data(), sink.bytes().size());
  }
  // Greedy with every token's top logprobs: comparing them bitwise compares the logits' rankings and
  // log-softmax values, row by row.
  static SessionRequest LogprobReq(std::vector<int32_t> prompt, int max_tokens) {
    SessionRequest r = Req(std::move(prompt), max_tokens);
    r.generate.top_logprobs = kMaxTopLogprobs;
    return r;
  }
  static bool SameLogprobs(const std::vector<TokenLogprobs>& a, const std::vector<TokenLogprobs>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].token != b[i].token || std::memcmp(&a[i].logprob, &b[i].logprob, sizeof(float)) != 0) return false;
      if (a[i].top.size() != b[i].top.size()) return false;
      for (size_t k = 0; k < a[i].top.size(); ++k) {
        if (a[i].top[k].token != b[i].top[k].token ||
            std::memcmp(&a[i].top[k].logprob, &b[i].top[k].logprob, sizeof(float)) != 0) return false;
      }
    }
    return true;
  }

  PromptCache cache_{PromptCacheOptions{size_t{1} << 30, nullptr}};
  static inline Engine* engine_ = nullptr;
  static inline std::filesystem::path dir_;
};

// §7: a 10-turn conversation; from turn 2 on each turn prefills exactly its new tokens.
TEST_F(CachedSessionTest, TenTurnConversationPrefillsOnlyNewTokens) {
  CachedSession s(*engine_, &cache_);
  std::vector<int32_t> history = Ids(300, 1);  // the system prompt
  int64_t prev_entry = 0;
  for (int turn = 0; turn < 10; ++turn) {
    const auto prompt = Cat(history, Ids(20, 100 + static_cast<uint32_t>(turn)));
    auto r = s.Generate(Req(prompt), nullptr);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->cached_tokens, prev_entry) << turn;
    EXPECT_EQ(r->prefilled_tokens, static_cast<int64_t>(prompt.size()) - prev_entry) << turn;
    EXPECT_EQ(r->snapshot_stored, turn == 0);  // only the first turn runs >= 256 tokens cold
    // The entry holds the prompt and every generated token but the last (sampled, never forwarded).
    EXPECT_EQ(r->entry_tokens, static_cast<int64_t>(prompt.size() + r->gen.tokens.size()) - 1);
    history = Cat(prompt, r->gen.tokens);
    prev_entry = r->entry_tokens;
    EXPECT_EQ(cache_.stats().entries, 1u) << turn;  // each turn's entry supersedes the last
  }
}

// §6: a cache hit gives bit-identical logits and tokens to a cold run (greedy).
TEST_F(CachedSessionTest, CacheHitIsBitwiseEqualToColdRun) {
  const auto prompt = Cat(Ids(280, 2), Ids(40, 3));
  CachedSession cold(*engine_, nullptr);
  auto cold_gen = cold.Generate(LogprobReq(prompt, 16), nullptr);
  ASSERT_TRUE(cold_gen.ok());
  EXPECT_EQ(cold_gen->cached_tokens, 0);

  CachedSession warm(*engine_, &cache_);
  // Seed the cache with a conversation sharing the first 280 tokens (a cold run >= 256: split at L - 1).
  ASSERT_TRUE(warm.Generate(Req(Cat(Ids(280, 2), Ids(30, 4))), nullptr).ok());
  auto warm_gen = warm.Generate(LogprobReq(prompt, 16), nullptr);
  ASSERT_TRUE(warm_gen.ok());
  EXPECT_EQ(warm_gen->cached_tokens, 280);
  EXPECT_EQ(warm_gen->gen.tokens, cold_gen->gen.tokens);
  ASSERT_EQ(warm_gen->gen.logprobs.size(), 16u);
  EXPECT_TRUE(SameLogprobs(warm_gen->gen.logprobs, cold_gen->gen.logprobs));
  // An exact repeat is served as P[:-1] + 1 token, with the same tokens again.
  auto again = warm.Generate(Req(prompt, 16), nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cached_tokens, static_cast<int64_t>(prompt.size()) - 1);
  EXPECT_EQ(again->gen.tokens, cold_gen->gen.tokens);
}

// §2.3: two requests extend views of one donor at the same time; each produces what it produces alone
// and the donor's bytes are unchanged.
TEST_F(CachedSessionTest, ConcurrentRequestsOnOneDonor) {
  const auto donor_prompt = Ids(100, 5);
  const auto a = Cat(donor_prompt, Ids(30, 6)), b = Cat(donor_prompt, Ids(45, 7));
  CachedSession cold(*engine_, nullptr);
  auto alone_a = cold.Generate(Req(a, 12), nullptr), alone_b = cold.Generate(Req(b, 12), nullptr);
  ASSERT_TRUE(alone_a.ok() && alone_b.ok());

  CachedSession s(*engine_, &cache_);
  ASSERT_TRUE(s.Generate(Req(donor_prompt, 1), nullptr).ok());  // entry: the 100 prompt tokens
  const auto donor = cache_.EntriesByRecency()[0];
  ASSERT_EQ(donor->tokens, donor_prompt);
  const uint64_t before = Checksum(dynamic_cast<const KvEntryState&>(*donor->state).kv());
  StatusOr<SessionResult> ra = Internal("not run"), rb = Internal("not run");
  std::thread ta([&] { ra = s.Generate(Req(a, 12), nullptr); });
  std::thread tb([&] { rb = s.Generate(Req(b, 12), nullptr); });
  ta.join();
  tb.join();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->cached_tokens, 100);
  EXPECT_EQ(rb->cached_tokens, 100);
  EXPECT_EQ(ra->gen.tokens, alone_a->gen.tokens);
  EXPECT_EQ(rb->gen.tokens, alone_b->gen.tokens);
  EXPECT_EQ(Checksum(dynamic_cast<const KvEntryState&>(*donor->state).kv()), before);
}

// §2.4: N repeats of one prompt keep the entry count and bytes constant.
TEST_F(CachedSessionTest, RepeatsKeepEntriesAndBytesConstant) {
  CachedSession s(*engine_, &cache_);
  const auto prompt = Ids(90, 8);
  ASSERT_TRUE(s.Generate(Req(prompt), nullptr).ok());
  const PromptCacheStats first = cache_.stats();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s.Generate(Req(prompt), nullptr).ok());
  EXPECT_EQ(cache_.stats().entries, first.entries);
  EXPECT_EQ(cache_.stats().bytes, first.bytes);
  EXPECT_EQ(cache_.stats().replaced, 5u);
}

// §2.4: a stop that ends generation early leaves the entry's token list exact.
TEST_F(CachedSessionTest, EarlyStopLeavesExactTokens) {
  CachedSession s(*engine_, &cache_);
  const auto prompt = Ids(50, 9);
  int seen = 0;
  auto r = s.Generate(Req(prompt, 20), [&](int32_t) { return ++seen < 3; });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->gen.tokens.size(), 3u);
  const auto entries = cache_.EntriesByRecency();
  ASSERT_EQ(entries.size(), 1u);
  // The 3rd token was sampled and rejected, never forwarded: not part of the entry.
  EXPECT_EQ(entries[0]->tokens, Cat(prompt, {r->gen.tokens[0], r->gen.tokens[1]}));
  EXPECT_EQ(entries[0]->state->n_pos(), 52);
}

// §2.5: a cold prefill of >= 256 tokens also stores the prompt-only state at exactly L - 1.
TEST_F(CachedSessionTest, PromptBoundarySnapshotOnLongColdPrefill) {
  CachedSession s(*engine_, &cache_);
  const auto prompt = Ids(260, 10);
  auto r = s.Generate(Req(prompt, 1), nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->snapshot_stored);
  // Two inserts: the snapshot at L - 1 and the put-back at L (the sampled token is never forwarded),
  // which supersedes the snapshot (a fully trimmable prefix of it).
  EXPECT_EQ(cache_.stats().inserts, 2u);
  auto entries = cache_.EntriesByRecency();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]->tokens, prompt);
  // A shorter cold run does not split.
  auto r2 = s.Generate(Req(Ids(200, 11), 1), nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_FALSE(r2->snapshot_stored);
  EXPECT_EQ(cache_.stats().inserts, 3u);
}

// §1: nothing computed under one namespace seeds another; §2.7 bypass neither reads nor writes.
TEST_F(CachedSessionTest, NamespacesAndBypass) {
  CachedSession s(*engine_, &cache_);
  const auto prompt = Ids(60, 12);
  ASSERT_TRUE(s.Generate(Req(prompt, 4, "tenant-a"), nullptr).ok());
  auto other = s.Generate(Req(prompt, 4, "tenant-b"), nullptr);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->cached_tokens, 0);
  auto same = s.Generate(Req(prompt, 4, "tenant-a"), nullptr);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->cached_tokens, 59);
  SessionRequest bypass = Req(prompt, 4, "tenant-a");
  bypass.bypass_cache = true;
  const size_t inserts = cache_.stats().inserts;
  auto b = s.Generate(bypass, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cached_tokens, 0);
  EXPECT_EQ(cache_.stats().inserts, inserts);
  EXPECT_EQ(cache_.stats().bypassed, 1u);
}

// Goal: a hit copies no bytes; its extension copies at most the shared partial tail block.
TEST_F(CachedSessionTest, HitCopiesAtMostThePartialTailBlock) {
  CachedSession s(*engine_, &cache_);
  const auto base = Ids(64, 13);  // two whole blocks of 32
  ASSERT_TRUE(s.Generate(Req(base, 1), nullptr).ok());
  auto aligned = s.Generate(Req(Cat(base, Ids(10, 14)), 1), nullptr);
  ASSERT_TRUE(aligned.ok());
  EXPECT_EQ(aligned->cached_tokens, 64);
  EXPECT_EQ(aligned->cow_bytes_copied, 0u);
  // The aligned request left an entry of 74 tokens: a hit there shares a partly filled third block.
  auto partial = s.Generate(Req(Cat(Cat(base, Ids(10, 14)), Ids(5, 15)), 1), nullptr);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->cached_tokens, 74);
  EXPECT_EQ(partial->cow_bytes_copied, engine_->kv_config().block_bytes());
  EXPECT_EQ(cache_.stats().cow_bytes_copied, engine_->kv_config().block_bytes());
}

// A client that leaves while its prompt is prefilled: the request ends as cancelled, not with an error,
// both when the rest of the prompt is short and when it is long enough for the prompt-boundary split
// (stored when the prompt's last row is done), and a cancelled request stores no snapshot.
TEST_F(CachedSessionTest, CancelDuringPrefillEndsAsCancelled) {
  CachedSession s(*engine_, &cache_);
  const auto head = Ids(100, 16);
  ASSERT_TRUE(s.Generate(Req(head, 1), nullptr).ok());  // an entry of exactly `head`
  for (size_t extra : {50u, 300u}) {  // below and above snapshot_min_tokens (256)
    std::atomic<bool> cancel{true};
    SessionRequest req = Req(Cat(head, Ids(extra, 17 + static_cast<uint32_t>(extra))), 8);
    req.generate.cancel = &cancel;
    auto r = s.Generate(req, [](int32_t) {
      ADD_FAILURE() << "no token after a cancel";
      return true;
    });
    ASSERT_TRUE(r.ok()) << extra << ": " << r.status().ToString();
    EXPECT_EQ(r->gen.stop, StopReason::kCancelled);
    EXPECT_TRUE(r->gen.tokens.empty());
    EXPECT_EQ(r->cached_tokens, 100);
    EXPECT_EQ(r->prefilled_tokens, 0);
    EXPECT_FALSE(r->snapshot_stored);
  }
}

}  // namespace
}  // namespace ember
