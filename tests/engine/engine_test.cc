// Engine API: generation stops (end-of-generation, length, cancel, callback), seeds, errors.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine_test_util.h"

namespace ember {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testutil::MakeTempDir("engine"));
    model_ = new std::string(testutil::GenModel(
        *dir_, "m", "--arch llama --tokenizer llama3 --n-layer 1 --n-embd 64 --n-head 2 --n-head-kv 1 --n-ff 64 --ctx 96 --type q8_0 --seed 9"));
  }
  std::unique_ptr<Engine> Load(int64_t n_ctx = 0) {
    EngineOptions eo;
    eo.threads = 2;
    eo.ubatch = 8;
    eo.n_ctx = n_ctx;
    auto e = Engine::Load(*model_, eo);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }
  static std::string* dir_;
  static std::string* model_;
};
std::string* EngineTest::dir_ = nullptr;
std::string* EngineTest::model_ = nullptr;

TEST_F(EngineTest, StopsAtLengthAndOnEog) {
  auto e = Load();
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> prompt = e->tokenizer()->Encode("hello world", true, false);
  ASSERT_GE(prompt.size(), 2u);
  GenerateOptions go;
  go.max_tokens = 5;
  go.sampling.temperature = 0;
  auto seq = e->NewSequence();
  std::vector<int32_t> streamed;
  auto r = e->Generate(**seq, prompt, go, [&](int32_t t) { streamed.push_back(t); return true; });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tokens.size(), 5u);
  EXPECT_EQ(streamed, r->tokens);
  EXPECT_EQ(r->stop, StopReason::kLength);
  // Everything but the last sampled token was forwarded.
  EXPECT_EQ((*seq)->n_pos(), static_cast<int64_t>(prompt.size() + 4));
  // Force an end-of-generation token with a logit bias.
  const int32_t eot = e->tokenizer()->eog_ids().front();
  go.sampling.logit_bias[eot] = 1e6f;
  auto seq2 = e->NewSequence();
  auto r2 = e->Generate(**seq2, prompt, go, nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->stop, StopReason::kEog);
  EXPECT_EQ(r2->tokens, std::vector<int32_t>{eot});
}

TEST_F(EngineTest, CancelAndCallbackStop) {
  auto e = Load();
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  GenerateOptions go;
  go.max_tokens = 20;
  go.stop_at_eog = false;
  std::atomic<bool> cancel{false};
  go.cancel = &cancel;
  auto seq = e->NewSequence();
  auto r = e->Generate(**seq, prompt, go, [&](int32_t) {
    cancel.store(true);
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kCancelled);
  EXPECT_EQ(r->tokens.size(), 1u);
  go.cancel = nullptr;
  auto seq2 = e->NewSequence();
  int calls = 0;
  auto r2 = e->Generate(**seq2, prompt, go, [&](int32_t) { return ++calls < 3; });
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->stop, StopReason::kCallback);
  EXPECT_EQ(r2->tokens.size(), 3u);
}

// A client that leaves while its prompt is prefilled: Generate ends as cancelled, not with an error (the
// server answered those with a 500), and Prefill keeps the chunks it had finished.
TEST_F(EngineTest, CancelDuringPrefillIsAStopNotAnError) {
  auto e = Load();
  ASSERT_NE(e, nullptr);
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 40; ++i) prompt.push_back(100 + i);  // 5 chunks of ubatch 8
  std::atomic<bool> cancel{true};
  GenerateOptions go;
  go.max_tokens = 8;
  go.cancel = &cancel;
  auto seq = e->NewSequence();
  auto r = e->Generate(**seq, prompt, go, [](int32_t) {
    ADD_FAILURE() << "no token after a cancel";
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stop, StopReason::kCancelled);
  EXPECT_TRUE(r->tokens.empty());
  EXPECT_EQ(r->prompt_tokens, 0);
  // Cancelled after the first chunk: Prefill answers null logits and keeps what it forwarded.
  cancel.store(false);
  auto seq2 = e->NewSequence();
  ASSERT_TRUE(e->Prefill(**seq2, std::span(prompt).first(8), 8, &cancel).ok());
  cancel.store(true);
  auto rest = e->Prefill(**seq2, std::span(prompt).subspan(8), 8, &cancel);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(*rest, nullptr);
  EXPECT_EQ((*seq2)->n_pos(), 8);
  EXPECT_EQ((*seq2)->tokens(), std::vector<int32_t>(prompt.begin(), prompt.begin() + 8));
}

TEST_F(EngineTest, SameSeedSameTokensDifferentSeedDiffers) {
  auto e = Load();
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> prompt = {10, 20, 30};
  auto run = [&](uint64_t seed) {
    GenerateOptions go;
    go.max_tokens = 24;
    go.stop_at_eog = false;
    go.sampling.temperature = 1.5f;
    go.sampling.top_k = 0;
    go.sampling.top_p = 1;
    go.sampling.min_p = 0;
    go.sampling.seed = seed;
    auto seq = e->NewSequence();
    return e->Generate(**seq, prompt, go, nullptr).value().tokens;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST_F(EngineTest, LogprobsMatchTeacherForcedLogits) {
  auto e = Load();
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> prompt = {7, 8, 9, 10};
  GenerateOptions go;
  go.max_tokens = 6;
  go.stop_at_eog = false;
  go.sampling.temperature = 0.9f;
  go.sampling.seed = 3;
  go.sampling.logit_bias[11] = 2.5f;
  go.top_logprobs = 4;
  std::vector<int32_t> order;  // +id: on_logprobs, -id-1: on_token
  go.on_logprobs = [&](const TokenLogprobs& lp) { order.push_back(lp.token); };
  auto seq = e->NewSequence();
  auto r = e->Generate(**seq, prompt, go, [&](int32_t t) { order.push_back(-t - 1); return true; });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tokens.size(), 6u);
  ASSERT_EQ(r->logprobs.size(), 6u);
  ASSERT_EQ(order.size(), 12u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(order[2 * i], r->tokens[i]);
    EXPECT_EQ(order[2 * i + 1], -r->tokens[i] - 1);
  }
  // Teacher-forced logits of the same positions (bitwise those Generate saw: batch invariance).
  auto ev = e->NewSequence(/*all_logits=*/true);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), r->tokens.begin(), r->tokens.end() - 1);
  std::vector<float> logits;
  ASSERT_TRUE(e->Evaluate(**ev, all, 0, &logits).ok());
  const int64_t nv = e->model().config().n_vocab;
  for (size_t i = 0; i < 6; ++i) {
    const TokenLogprobs& lp = r->logprobs[i];
    EXPECT_EQ(lp.token, r->tokens[i]);
    const float* row = logits.data() + (prompt.size() - 1 + i) * nv;
    std::vector<double> l(row, row + nv);
    l[11] += 2.5;
    double mx = -INFINITY, sum = 0;
    for (double v : l) mx = std::max(mx, v);
    for (double v : l) sum += std::exp(v - mx);
    const double lz = mx + std::log(sum);
    EXPECT_NEAR(lp.logprob, l[lp.token] - lz, 2e-5);
    ASSERT_EQ(lp.top.size(), 4u);
    const auto best = std::max_element(l.begin(), l.end()) - l.begin();
    EXPECT_EQ(lp.top[0].token, best);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(lp.top[k].logprob, l[lp.top[k].token] - lz, 2e-5);
      if (k > 0) {
        EXPECT_GE(lp.top[k - 1].logprob, lp.top[k].logprob);
      }
    }
    bool in_top = false;
    for (const TokenLogprob& t : lp.top) in_top |= t.token == lp.token;
    if (!in_top) {
      EXPECT_LE(lp.logprob, lp.top[3].logprob);
    }
  }
  // Off by default; out of range is an error.
  GenerateOptions plain = go;
  plain.top_logprobs = -1;
  auto seq2 = e->NewSequence();
  auto r2 = e->Generate(**seq2, prompt, plain, nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->logprobs.empty());
  EXPECT_EQ(r2->tokens, r->tokens);  // asking for logprobs does not change the tokens
  plain.top_logprobs = 21;
  auto seq3 = e->NewSequence();
  EXPECT_EQ(e->Generate(**seq3, prompt, plain, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, ErrorsAreValues) {
  auto e = Load(/*n_ctx=*/16);
  ASSERT_NE(e, nullptr);
  auto seq = e->NewSequence();
  std::vector<int32_t> too_long(17, 1);
  auto r = e->Prefill(**seq, too_long);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  auto seq2 = e->NewSequence();
  const int32_t bad = 1 << 30;
  EXPECT_EQ(e->Decode(**seq2, bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*seq2)->n_pos(), 0);
  EXPECT_FALSE(e->Prefill(**seq2, std::vector<int32_t>{}).ok());
  // A state of another geometry cannot be adopted.
  KvConfig other = e->kv_config();
  other.n_kv_head += 1;
  EXPECT_FALSE((*seq2)->Adopt(std::move(KvState::Create(other).value()), {}).ok());
  // Nor one with the same shapes whose layers are windowed where the model's are full.
  KvConfig windowed = e->kv_config();
  windowed.kinds.assign(static_cast<size_t>(windowed.n_layer), LayerStateSpec{StateKind::kWindow, 64});
  auto wstate = KvState::Create(windowed);
  ASSERT_TRUE(wstate.ok()) << wstate.status().ToString();
  const Status st = (*seq2)->Adopt(std::move(*wstate), {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.ToString().find("state kind"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ember
