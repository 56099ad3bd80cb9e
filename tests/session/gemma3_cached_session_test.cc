// The prompt cache in front of a gemma3 engine (window layers, spec §3.2): a next turn whose rendering
// of the reply drifts still hits (the [prompt + reply] entry within its margin, else the prompt-boundary
// entry), an entry whose window has moved on refuses the trim and the lookup falls back, window layers
// cost a bounded number of bytes per entry, and a cache hit is bitwise a cold run (§6).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "session/cached_session.h"
#include "cache/kv_entry_state.h"
#include "session/session_test_util.h"
#include "cache/trim_rules.h"

namespace ember {
namespace {

constexpr int64_t kWindow = 128;  // margin max(32, 128 / 4) = 32, blocks of 32

class Gemma3CachedSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("ember_gemma3_cache_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string model = (dir_ / "g.gguf").string();
    // Layers 0, 1 local (window 128), layer 2 global.
    engine_ = session_test::GenerateAndLoad(model,
                                            "--arch gemma3 --tokenizer gemma3 --n-layer 3 --n-embd 64 --n-head 4 "
                                            "--n-head-kv 2 --n-ff 128 --sliding-window 128 --swa-pattern 3 "
                                            "--untied --type f32",
                                            KvDtype::kF16, /*load_tokenizer=*/false);
  }
  static void TearDownTestSuite() {
    delete engine_;
    std::filesystem::remove_all(dir_);
  }

  static std::vector<int32_t> Ids(size_t n, uint32_t seed) { return session_test::PseudoIds(n, seed, 1000, 200000); }
  static std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    return session_test::Cat(std::move(a), b);
  }
  static SessionRequest Req(std::vector<int32_t> prompt, int max_tokens = 8) {
    return session_test::GreedyRequest(std::move(prompt), max_tokens);
  }
  // The first token's distribution after the whole prompt, through the session; the entries that run
  // added are removed again, so that probing never changes what later lookups find.
  std::vector<float> PromptLogits(CachedSession& s, const SessionRequest& req, SessionResult* r) {
    std::set<const CacheEntry*> before;
    for (const auto& e : cache_.EntriesByRecency()) before.insert(e.get());
    std::vector<float> out = session_test::FirstTokenDistribution(s, req, r);
    for (const auto& e : cache_.EntriesByRecency()) {
      if (!before.count(e.get())) cache_.Remove(e.get());
    }
    return out;
  }
  static bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && !a.empty() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }
  static const KvState& Kv(const CacheEntry& e) { return dynamic_cast<const KvEntryState&>(*e.state).kv(); }

  static PromptCacheOptions CacheOptions() {
    PromptCacheOptions o;
    o.capacity_bytes = size_t{1} << 30;
    return o;
  }

  PromptCache cache_{CacheOptions()};
  static inline Engine* engine_ = nullptr;
  static inline std::filesystem::path dir_;
};

TEST_F(Gemma3CachedSessionTest, ModelHasWindowLayers) {
  const KvConfig c = engine_->kv_config();
  ASSERT_EQ(c.kinds.size(), 3u);
  EXPECT_EQ(c.kinds[0].kind, StateKind::kWindow);
  EXPECT_EQ(c.kinds[0].window, kWindow);
  EXPECT_EQ(c.kinds[1].kind, StateKind::kWindow);
  EXPECT_EQ(c.kinds[2].kind, StateKind::kFull);
  EXPECT_EQ(c.WindowMargin(kWindow), 32);
}

// Turn 2 re-renders turn 1's reply differently. Drift near the end of the reply: the [prompt + reply]
// entry still holds the window the trim needs and serves it. Drift at the start of the reply: that
// entry's window has moved on, it refuses, and the prompt-boundary entry (L - 1) serves. Both are
// bitwise a cold run.
TEST_F(Gemma3CachedSessionTest, MultiTurnDriftHitsPromptBoundaryEntry) {
  CachedSession s(*engine_, &cache_);
  const auto p1 = Ids(400, 1);
  auto t1 = s.Generate(Req(p1, 60), nullptr);
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  ASSERT_TRUE(t1->snapshot_stored);
  ASSERT_EQ(t1->entry_tokens, 459);
  ASSERT_EQ(cache_.stats().entries, 2u);  // the window entry is not fully trimmable: no supersede
  const auto& reply = t1->gen.tokens;
  for (const auto& e : cache_.EntriesByRecency()) {
    if (e->tokens.size() == 459) {
      EXPECT_EQ(Kv(*e).held_from(0), 288);  // 459 - 128 - 32 -> block 288
    }
  }

  CachedSession cold(*engine_, static_cast<PromptCache*>(nullptr));
  for (const int drift_at : {58, 0}) {
    std::vector<int32_t> rendered(reply.begin(), reply.end());
    int32_t& t = rendered[static_cast<size_t>(drift_at)];
    t = t == 777 ? 778 : 777;  // one token rendered differently
    const auto p2 = Cat(Cat(p1, rendered), Ids(20, 2 + static_cast<uint32_t>(drift_at)));
    SessionResult rc, rw;
    const auto cold_logits = PromptLogits(cold, Req(p2), &rc);
    const auto warm_logits = PromptLogits(s, Req(p2), &rw);
    const int64_t want = drift_at == 58 ? 400 + 58 : 399;
    EXPECT_EQ(rw.cached_tokens, want) << "drift at reply token " << drift_at;
    EXPECT_TRUE(SameBits(warm_logits, cold_logits)) << "drift at reply token " << drift_at;
  }
}

// An entry whose window has moved on refuses a trim: the lookup takes the next candidate, or misses
// (fresh prefill) when there is none — and the result is still bitwise a cold run.
TEST_F(Gemma3CachedSessionTest, MovedOnWindowRefusesTrimAndFallsBack) {
  CachedSessionOptions no_snapshot;
  no_snapshot.snapshot_min_tokens = 1 << 30;
  CachedSession s(*engine_, &cache_, no_snapshot);
  const auto base = Ids(300, 5);
  // A long entry: 300 + 200 tokens, window layers hold only from 500 - 160 -> 320.
  ASSERT_TRUE(s.Generate(Req(Cat(base, Ids(200, 6)), 1), nullptr).ok());
  ASSERT_EQ(cache_.stats().entries, 1u);
  const auto long_entry = cache_.EntriesByRecency()[0];
  EXPECT_EQ(Kv(*long_entry).held_from(0), 320);
  auto at300 = CanServeAt(*long_entry->state, 300);
  ASSERT_TRUE(at300.ok());
  EXPECT_FALSE(*at300);
  EXPECT_FALSE(*FullyTrimmable(*long_entry->state));

  const auto prompt = Cat(base, Ids(10, 7));  // shares 300 tokens with the long entry only
  CachedSession cold(*engine_, static_cast<PromptCache*>(nullptr));
  SessionResult rc, r1;
  const auto cold_logits = PromptLogits(cold, Req(prompt), &rc);
  const auto miss_logits = PromptLogits(s, Req(prompt), &r1);
  EXPECT_EQ(r1.cached_tokens, 0);  // refused: fresh prefill
  EXPECT_TRUE(SameBits(miss_logits, cold_logits));

  // A shorter entry (the first 250 tokens) is the next candidate.
  ASSERT_TRUE(s.Generate(Req(std::vector<int32_t>(base.begin(), base.begin() + 251), 1), nullptr).ok());
  SessionResult r2;
  const auto fallback_logits = PromptLogits(s, Req(prompt), &r2);
  EXPECT_EQ(r2.cached_tokens, 251);
  EXPECT_TRUE(SameBits(fallback_logits, cold_logits));
  // The long entry is untouched and still serves its own exact continuation.
  EXPECT_EQ(Kv(*long_entry).n_pos(), 500);
  SessionResult r3;
  (void)PromptLogits(s, Req(Cat(long_entry->tokens, Ids(5, 8))), &r3);
  EXPECT_EQ(r3.cached_tokens, 500);
}

// Window layers' cached bytes are bounded by window + margin, not by the sequence length.
TEST_F(Gemma3CachedSessionTest, WindowLayerBytesPerEntryAreBounded) {
  CachedSessionOptions no_snapshot;
  no_snapshot.snapshot_min_tokens = 1 << 30;
  CachedSession s(*engine_, &cache_, no_snapshot);
  const KvConfig c = engine_->kv_config();
  const size_t per_pos = c.layer_position_bytes();
  // Bound: 2 window layers x (window + margin + a partial block at each end) positions.
  const size_t bound = 2 * per_pos * static_cast<size_t>(kWindow + c.WindowMargin(kWindow) + 2 * c.block_size);
  size_t window_bytes_short = 0;
  for (const int len : {200, 500, 1100}) {
    cache_.Clear();
    ASSERT_TRUE(s.Generate(Req(Ids(static_cast<size_t>(len), 9), 1), nullptr).ok());
    const auto e = cache_.EntriesByRecency()[0];
    const KvState& kv = Kv(*e);
    EXPECT_LE(kv.group_bytes(0), bound) << len;
    EXPECT_EQ(kv.group_bytes(2), per_pos * static_cast<size_t>((len + 31) / 32 * 32)) << len;  // full layer grows
    EXPECT_EQ(e->state->bytes(), kv.group_bytes(0) + kv.group_bytes(2));
    if (len == 500) window_bytes_short = kv.group_bytes(0);
    if (len == 1100) {
      EXPECT_EQ(kv.group_bytes(0), window_bytes_short);  // flat once past the window
    }
  }
}

// §6 for gemma3: a hit at a trimmable offset past the window gives bitwise the cold logits and tokens.
TEST_F(Gemma3CachedSessionTest, CacheHitIsBitwiseEqualToColdRun) {
  const auto prompt = Cat(Ids(420, 11), Ids(40, 12));
  CachedSession cold(*engine_, static_cast<PromptCache*>(nullptr));
  SessionResult rc;
  const auto cold_logits = PromptLogits(cold, Req(prompt), &rc);
  auto cold_gen = cold.Generate(Req(prompt, 16), nullptr);
  ASSERT_TRUE(cold_gen.ok());

  CachedSession warm(*engine_, &cache_);
  // Donor: the first 420 tokens then a different 30 (450 positions; window layers hold from
  // (450 - 160) / 32 * 32 = 288): a trim to 420 needs [292, 420), still held.
  ASSERT_TRUE(warm.Generate(Req(Cat(Ids(420, 11), Ids(30, 13)), 1), nullptr).ok());
  SessionResult rw;
  const auto warm_logits = PromptLogits(warm, Req(prompt), &rw);
  EXPECT_EQ(rw.cached_tokens, 420);
  EXPECT_TRUE(SameBits(warm_logits, cold_logits));
  auto warm_gen = warm.Generate(Req(prompt, 16), nullptr);
  ASSERT_TRUE(warm_gen.ok());
  EXPECT_EQ(warm_gen->cached_tokens, 420);
  EXPECT_EQ(warm_gen->gen.tokens, cold_gen->gen.tokens);
  auto again = warm.Generate(Req(prompt, 16), nullptr);  // exact repeat: P[:-1] + 1 token
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cached_tokens, static_cast<int64_t>(prompt.size()) - 1);
  EXPECT_EQ(again->gen.tokens, cold_gen->gen.tokens);
}

}  // namespace
}  // namespace ember
