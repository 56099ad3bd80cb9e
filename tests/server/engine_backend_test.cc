// The real engine behind the server's backend seam: templating, tokenizing, generation, and the RAM
// prompt cache reporting cached tokens on a repeated prompt with identical greedy output.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/engine_backend.h"
#include "support/test_support.h"
#include "tiny_model.h"

namespace ember::server {
namespace {

class EngineBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("m.gguf"));
  }
  static void TearDownTestSuite() { delete dir_; }
  static testing::TempDir* dir_;
};
testing::TempDir* EngineBackendTest::dir_ = nullptr;

TEST_F(EngineBackendTest, GeneratesAndReusesThePromptCache) {
  ServeOptions o;
  o.model_path = dir_->file("m.gguf");
  o.prompt_cache_bytes = "256M";
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  InferenceBackend& b = **backend;
  EXPECT_EQ(b.model_id(), "m");

  ChatTemplateInput in;
  in.messages = {{"system", "You are terse.", {}, "", ""}, {"user", "Say hello to the cache.", {}, "", ""}};
  auto text = b.ApplyChatTemplate(in);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("Say hello to the cache."), std::string::npos);
  auto ids = b.Tokenize(*text, /*add_special=*/false, /*parse_special=*/true);
  ASSERT_TRUE(ids.ok());
  ASSERT_GT(ids->size(), 8u);

  GenerationRequest req;
  req.prompt = *ids;
  req.max_tokens = 12;
  req.sampling.temperature = 0;
  std::vector<std::vector<int32_t>> outputs;
  std::vector<GenerationResult> results;
  for (int run = 0; run < 2; ++run) {
    std::vector<int32_t> got;
    GenerationResult r;
    ASSERT_TRUE(b.Generate(req, [&](const TokenEvent& ev) { got.push_back(ev.id); return true; }, &r).ok());
    outputs.push_back(got);
    results.push_back(r);
  }
  EXPECT_EQ(results[0].cached_tokens, 0);
  EXPECT_EQ(results[0].cache_tier, "none");
  EXPECT_EQ(results[1].cached_tokens, static_cast<int32_t>(ids->size()) - 1);  // an exact repeat: P[:-1]
  EXPECT_EQ(results[1].cache_tier, "ram");
  EXPECT_EQ(outputs[0], outputs[1]);  // a cache hit answers exactly what a cold run answers
  EXPECT_EQ(results[1].prompt_tokens, static_cast<int32_t>(ids->size()));

  // A different salt is a different namespace: no reuse across tenants.
  req.cache_salt = "tenant-b";
  GenerationResult other;
  ASSERT_TRUE(b.Generate(req, [](const TokenEvent&) { return true; }, &other).ok());
  EXPECT_EQ(other.cached_tokens, 0);
  const BackendStats st = b.Stats();
  ASSERT_FALSE(st.cache_tiers.empty());
  EXPECT_EQ(st.cache_tiers[0].tier, "ram");
}

// OpenAI logprobs through the real engine: every reported token carries its log-probability and the
// requested alternatives, most likely first; under greedy decoding the chosen token is the top one.
TEST_F(EngineBackendTest, ReportsLogprobsOfGeneratedTokens) {
  ServeOptions o;
  o.model_path = dir_->file("m.gguf");
  o.prompt_cache_bytes = "0";
  o.threads = 1;
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  InferenceBackend& b = **backend;
  EXPECT_EQ(b.Stats().engine, "ember-cpu");
  auto ids = b.Tokenize("The quick brown fox", /*add_special=*/true, /*parse_special=*/false);
  ASSERT_TRUE(ids.ok());
  GenerationRequest req;
  req.prompt = *ids;
  req.max_tokens = 6;
  req.sampling.temperature = 0;
  req.logprobs = true;
  req.top_logprobs = 3;
  std::vector<TokenEvent> events;
  GenerationResult r;
  ASSERT_TRUE(b.Generate(req, [&](const TokenEvent& ev) { events.push_back(ev); return true; }, &r).ok());
  ASSERT_FALSE(events.empty());
  for (const TokenEvent& ev : events) {
    EXPECT_LE(ev.logprob, 0.0f);
    EXPECT_GT(ev.logprob, -100.0f);
    ASSERT_EQ(ev.top_logprobs.size(), 3u);
    EXPECT_EQ(ev.top_logprobs[0].id, ev.id);  // greedy picks the most likely token
    EXPECT_FLOAT_EQ(ev.top_logprobs[0].logprob, ev.logprob);
    EXPECT_EQ(ev.top_logprobs[0].piece, ev.piece);
    EXPECT_GE(ev.top_logprobs[0].logprob, ev.top_logprobs[1].logprob);
    EXPECT_GE(ev.top_logprobs[1].logprob, ev.top_logprobs[2].logprob);
  }
  // Without the request flag nothing is attached.
  req.logprobs = false;
  std::vector<TokenEvent> plain;
  ASSERT_TRUE(b.Generate(req, [&](const TokenEvent& ev) { plain.push_back(ev); return true; }, &r).ok());
  ASSERT_EQ(plain.size(), events.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].id, events[i].id);
    EXPECT_TRUE(plain[i].top_logprobs.empty());
  }
}

TEST_F(EngineBackendTest, ReportsBadInputAsErrors) {
  ServeOptions o;
  o.model_path = dir_->file("missing.gguf");
  EXPECT_FALSE(CreateEngineBackend(o).ok());
  o.model_path = dir_->file("m.gguf");
  o.prompt_cache_bytes = "lots";
  EXPECT_FALSE(CreateEngineBackend(o).ok());
  o.prompt_cache_bytes = "0";
  auto b = CreateEngineBackend(o);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE((*b)->Detokenize({-1}).ok());
}

// A client that leaves while its prompt is being prefilled (the lane sets the cancel flag from another
// thread): Generate ends as cancelled, never with an error — the server answered those with a 500. The
// flag is set a fraction of the way into a long prompt's prefill; a probe in the same namespace then
// shows how far the prefill had come (the forwarded part goes back into the cache), which proves the
// cancel landed during the prefill. The fraction adapts when the machine's timing made it land before
// the first chunk or after the last.
TEST_F(EngineBackendTest, CancelDuringPrefillIsACancelNotAnError) {
  const std::string model = dir_->file("long.gguf");
  ASSERT_EQ(testing::RunCommand(testing::EmberBinary() + " gen-model --out " + model +
                                " --n-layer 4 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 512 --ctx 8192"
                                " --type q8_0 --seed 3 > /dev/null")
                .exit_code,
            0);
  ServeOptions o;
  o.model_path = model;
  o.prompt_cache_bytes = "1G";
  o.threads = 2;
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  InferenceBackend& b = **backend;
  std::string text;
  for (int i = 0; i < 1200; ++i) text += "word" + std::to_string(i % 97) + " ";
  auto ids = b.Tokenize(text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_TRUE(ids.ok());
  const int32_t n = static_cast<int32_t>(ids->size());
  ASSERT_GT(n, 2000);
  GenerationRequest req;
  req.prompt = *ids;
  req.max_tokens = 4;
  req.sampling.temperature = 0;
  auto no_tokens = [](const TokenEvent&) {
    ADD_FAILURE() << "no token after a cancel";
    return true;
  };
  req.cache_salt = "uncancelled";
  GenerationResult full;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.Generate(req, [](const TokenEvent&) { return true; }, &full).ok());
  // Wall time, not full.prefill_ms: that leaves out the prompt-boundary split's part of the prefill.
  const double full_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

  double fraction = 0.3;
  bool landed_during_prefill = false;
  for (int attempt = 0; attempt < 6 && !landed_during_prefill; ++attempt) {
    std::atomic<bool> cancel{false};
    req.cancel = &cancel;
    req.cache_salt = "attempt-" + std::to_string(attempt);
    std::thread client_leaves([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(full_us * fraction)));
      cancel.store(true);
    });
    GenerationResult r;
    Status st = b.Generate(req, no_tokens, &r);
    client_leaves.join();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(r.completion_tokens, 0);
    // The probe is cancelled before it starts: it only looks the prompt up.
    GenerationResult probe;
    ASSERT_TRUE(b.Generate(req, no_tokens, &probe).ok());
    EXPECT_EQ(probe.finish_reason, FinishReason::kCancelled);
    landed_during_prefill = probe.cached_tokens > 0 && probe.cached_tokens < n - 1;
    if (probe.cached_tokens == 0) fraction *= 2;          // before the first chunk finished
    if (probe.cached_tokens >= n - 1) fraction /= 3;      // after the prefill
  }
  EXPECT_TRUE(landed_during_prefill);
}

// Token ids the vocabulary does not have are the client's mistake (400), not the server's (500).
TEST_F(EngineBackendTest, PromptIdsOutsideTheVocabularyAreInvalidArguments) {
  ServeOptions o;
  o.model_path = dir_->file("m.gguf");
  o.prompt_cache_bytes = "64M";
  o.threads = 1;
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok());
  GenerationRequest req;
  req.prompt = {1, 2, 2147483647};
  req.max_tokens = 2;
  GenerationResult r;
  Status st = (*backend)->Generate(req, [](const TokenEvent&) { return true; }, &r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  // A logit_bias id outside the vocabulary is ignored (it has no logit); the generation runs.
  req.prompt = {1, 2, 3};
  req.sampling.logit_bias = {{2147483647, 5.0f}, {0, -100.0f}};
  ASSERT_TRUE((*backend)->Generate(req, [](const TokenEvent&) { return true; }, &r).ok());
  EXPECT_LE(r.completion_tokens, 2);
}

}  // namespace
}  // namespace ember::server
