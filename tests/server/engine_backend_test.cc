// The real engine behind the server's backend seam: templating, tokenizing, generation, and the RAM
// prompt cache reporting cached tokens on a repeated prompt with identical greedy output.
#include <gtest/gtest.h>

#include "server/engine_backend.h"
#include "support/test_support.h"

namespace ember::server {
namespace {

class EngineBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::string cmd = testing::EmberBinary() + " gen-model --out " + dir_->file("m.gguf") +
                            " --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32 --seed 7";
    ASSERT_EQ(testing::RunCommand(cmd + " > /dev/null").exit_code, 0);
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

}  // namespace
}  // namespace ember::server
