// The prompt cache in front of a qwen35 hybrid (issue #31, docs/hybrid.md): a recurrent state can be
// reused only at the exact position it was kept, so the session keeps checkpoints — before each turn
// start, every checkpoint_every tokens and at L - 1 — and a prompt that diverges at d resumes from the
// deepest checkpoint <= d. Every hit is bitwise the cold run; a second lane with the same preamble
// adopts the first's in-flight state at the point they diverge.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "cache/kv_entry_state.h"
#include "session/cached_session.h"
#include "session/run_together.h"
#include "session/session_test_util.h"

namespace ember {
namespace {

class HybridSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("ember_hybrid_session_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    // Layers 0-2 gated delta net, 3 attention; the vocabulary has <|im_start|>.
    engine_ = session_test::GenerateAndLoad((dir_ / "h.gguf").string(),
                                            "--arch qwen35 --tokenizer qwen35 --n-layer 4 --n-embd 64 --n-head 4 "
                                            "--n-head-kv 2 --head-dim 16 --n-ff 128 --ssm-state 16 --ssm-groups 2 "
                                            "--ssm-heads 4 --type f32 --untied",
                                            KvDtype::kF16, /*load_tokenizer=*/true);
    ASSERT_NE(engine_, nullptr);
    turn_ = engine_->tokenizer()->TokenId("<|im_start|>");
    ASSERT_GE(turn_, 0);
  }
  static void TearDownTestSuite() {
    delete engine_;
    std::filesystem::remove_all(dir_);
  }

  static std::vector<int32_t> Ids(size_t n, uint32_t seed) { return session_test::PseudoIds(n, seed, 1000, 100000); }
  static std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    return session_test::Cat(std::move(a), b);
  }
  // A chat-shaped prompt: each turn is <|im_start|> then its ids.
  static std::vector<int32_t> Turns(const std::vector<std::vector<int32_t>>& turns) {
    std::vector<int32_t> out;
    for (const auto& t : turns) {
      out.push_back(turn_);
      out.insert(out.end(), t.begin(), t.end());
    }
    return out;
  }
  static SessionRequest Req(std::vector<int32_t> prompt, int max_tokens = 6) {
    return session_test::GreedyRequest(std::move(prompt), max_tokens);
  }
  static std::vector<float> Cold(const SessionRequest& req) {
    CachedSession cold(*engine_, static_cast<PromptCache*>(nullptr));
    SessionResult r;
    return session_test::FirstTokenDistribution(cold, req, &r);
  }
  static bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && !a.empty() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }

  PromptCache cache_{PromptCacheOptions{size_t{1} << 30, nullptr}};
  static inline Engine* engine_ = nullptr;
  static inline int32_t turn_ = -1;
  static inline std::filesystem::path dir_;
};

TEST_F(HybridSessionTest, TheModelIsHybrid) {
  const KvConfig c = engine_->kv_config();
  ASSERT_EQ(c.kinds.size(), 4u);
  EXPECT_EQ(c.kinds[0].kind, StateKind::kRecurrent);
  EXPECT_EQ(c.kinds[3].kind, StateKind::kFull);
  EXPECT_TRUE(c.has_recurrent());
  EXPECT_GT(c.recurrent_bytes(), 0u);
}

// Turn starts at 0, 121 and 202 of a 283-token prompt: checkpoints at 121, 202 and L - 1 = 282 (none
// at 0: nothing precedes it). A prompt that rewrites the last turn resumes at 202; one that rewrites
// the middle turn at 121; the same prompt again at 282 (and its run puts p1's exact state back, which a
// longer prompt then resumes from). All bitwise the cold run.
TEST_F(HybridSessionTest, ADivergentPromptResumesFromTheDeepestCheckpoint) {
  CachedSessionOptions o;
  o.checkpoint_every = 0;
  CachedSession s(*engine_, &cache_, o);
  const auto sys = Ids(120, 1), user = Ids(80, 2), tool = Ids(80, 3);
  const auto p1 = Turns({sys, user, tool});
  ASSERT_EQ(p1.size(), 283u);
  auto r1 = s.Generate(Req(p1), nullptr);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(r1->checkpoints_stored, 3);
  for (const int64_t at : {121, 202, 282}) {
    EXPECT_NE(cache_.FindExact({p1.begin(), p1.begin() + at}, ""), nullptr) << "no checkpoint at " << at;
  }
  struct Probe {
    std::vector<int32_t> prompt;
    int64_t want;
  };
  const std::vector<Probe> probes = {
      {Turns({sys, user, Ids(90, 4)}), 202},   // the tool result rewritten
      {Turns({sys, Ids(60, 5), tool}), 121},   // the user turn rewritten
      {p1, 282},                               // the same prompt: its last token is forwarded again
      {Cat(p1, Ids(30, 6)), 283},              // a longer one: the previous probe put p1's state back
  };
  for (size_t i = 0; i < probes.size(); ++i) {
    SessionResult r;
    const auto warm = session_test::FirstTokenDistribution(s, Req(probes[i].prompt), &r);
    EXPECT_EQ(r.cached_tokens, probes[i].want) << "probe " << i;
    EXPECT_TRUE(SameBits(warm, Cold(Req(probes[i].prompt)))) << "probe " << i;
  }
  // No entry of a hybrid is ever served short of its length.
  EXPECT_GT(cache_.stats().skipped_untrimmable, 0u);
}

// checkpoint_every adds checkpoints inside a long turn: a prompt diverging inside it resumes from the
// last multiple before the divergence.
TEST_F(HybridSessionTest, PeriodicCheckpointsInsideALongPrefill) {
  CachedSessionOptions o;
  o.checkpoint_every = 100;
  CachedSession s(*engine_, &cache_, o);
  const auto doc = Ids(350, 7);
  auto r1 = s.Generate(Req(doc), nullptr);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(r1->checkpoints_stored, 4);  // 100, 200, 300 and 349
  auto p2 = doc;
  p2.resize(250);
  p2 = Cat(p2, Ids(40, 8));
  SessionResult r;
  const auto warm = session_test::FirstTokenDistribution(s, Req(p2), &r);
  EXPECT_EQ(r.cached_tokens, 200);
  EXPECT_TRUE(SameBits(warm, Cold(Req(p2))));
}

// Two agents with the same 200-token preamble arrive together on one runner: the second waits at the
// point they diverge, the first's chunk stops exactly there, and the second adopts that state instead
// of computing it. Both replies are their solo runs'.
TEST_F(HybridSessionTest, ASecondLaneAdoptsTheFirstsInFlightState) {
  const auto preamble = Turns({Ids(150, 9), Ids(49, 10)});
  ASSERT_EQ(preamble.size(), 201u);
  const std::vector<SessionRequest> reqs = {Req(Turns({Ids(150, 9), Ids(49, 10), Ids(30, 11)})),
                                            Req(Turns({Ids(150, 9), Ids(49, 10), Ids(40, 12)}))};
  std::vector<std::vector<int32_t>> solo;
  for (const auto& r : reqs) {
    CachedSession cold(*engine_, static_cast<PromptCache*>(nullptr));
    auto out = cold.Generate(r, nullptr);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    solo.push_back(out->gen.tokens);
  }
  BatchRunnerOptions bo;
  bo.step_tokens = 64;
  BatchRunner runner(*engine_, bo);
  BatchedSession s(*engine_, runner, &cache_);
  auto out = session_test::RunTogether(s, runner, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].status().ToString();
    EXPECT_EQ(out[i]->gen.tokens, solo[i]) << i;
  }
  // The shared part: the preamble plus the third turn's start token.
  EXPECT_EQ(out[1]->shared_tokens, 202);
  EXPECT_EQ(out[0]->prefilled_tokens + out[1]->prefilled_tokens,
            static_cast<int64_t>(reqs[0].prompt.size() + reqs[1].prompt.size()) - 202);
}

}  // namespace
}  // namespace ember
