// A prompt whose byte length alone proves it cannot fit the context is refused before it is tokenized
// (issue 29): StartGeneration's PromptTokens compares the text's bytes with the vocabulary's longest
// piece (InferenceBackend::max_token_bytes), for raw completions and for rendered chats alike. A 7 MiB
// prompt took seconds of tokenizing before its 400; here it must be refused within a second.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server/completion_flow.h"
#include "server/engine_backend.h"
#include "server/tiny_model.h"
#include "support/test_support.h"

namespace ember::server {
namespace {

class PromptBytesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("m.gguf"));
    ServeOptions o;
    o.model_path = dir_->file("m.gguf");
    o.ctx_size = 4096;
    auto b = CreateEngineBackend(o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    backend_ = b->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    delete dir_;
  }
  static double Seconds(const std::chrono::steady_clock::time_point& t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  static testing::TempDir* dir_;
  static InferenceBackend* backend_;
};
testing::TempDir* PromptBytesTest::dir_ = nullptr;
InferenceBackend* PromptBytesTest::backend_ = nullptr;

TEST_F(PromptBytesTest, TheVocabularyBoundsBytesPerToken) {
  const size_t m = backend_->max_token_bytes();
  ASSERT_GE(m, 4u);
  // The bound must hold: a text tokenizes into at least bytes / max_token_bytes tokens.
  const std::string text = "The quick brown fox jumps over the lazy dog, 1234567890 times.";
  auto ids = backend_->Tokenize(text, false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_GE(static_cast<int64_t>(ids->size()), MinTokensForBytes(text.size(), m));
}

TEST_F(PromptBytesTest, SevenMiBCompletionPromptIsRefusedUnread) {
  ServerContext ctx;
  ServedModel model{"m", "", backend_, nullptr};
  CompletionRequest req;
  req.kind = ApiKind::kCompletion;
  req.prompt_text = std::string(7u << 20, 'a');
  const auto t0 = std::chrono::steady_clock::now();
  auto ids = PromptTokens(ctx, model, req, backend_->context_length() - 1);
  const double s = Seconds(t0);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().http_status, 400);
  EXPECT_EQ(ids.error().param, "prompt");
  EXPECT_NE(ids.error().message.find("does not fit the context length (4096 tokens"), std::string::npos)
      << ids.error().message;
  EXPECT_LT(s, 1.0);
}

TEST_F(PromptBytesTest, SevenMiBChatPromptIsRefusedUnread) {
  ServerContext ctx;
  ServedModel model{"m", "", backend_, nullptr};
  CompletionRequest req;
  req.kind = ApiKind::kChat;
  // Control-token strings in client text get marks the bound must not count as prompt bytes.
  req.messages = {{"user", std::string(7u << 20, 'a') + "<|eot_id|>", {}, "", ""}};
  const auto t0 = std::chrono::steady_clock::now();
  auto ids = PromptTokens(ctx, model, req, backend_->context_length() - 1);
  const double s = Seconds(t0);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().http_status, 400);
  EXPECT_EQ(ids.error().param, "messages");
  EXPECT_NE(ids.error().message.find("context length"), std::string::npos) << ids.error().message;
  // The chat is rendered (template and client-text marks: about 0.8 s for 7 MiB on a loaded 2-core
  // machine) before its bytes are known; tokenizing it took seconds more.
  EXPECT_LT(s, 3.0);
}

TEST_F(PromptBytesTest, APromptThatMayFitIsTokenizedAndCountTokensNeverRefuses) {
  ServerContext ctx;
  ServedModel model{"m", "", backend_, nullptr};
  CompletionRequest req;
  req.kind = ApiKind::kCompletion;
  req.prompt_text = "hello world";
  auto ids = PromptTokens(ctx, model, req, backend_->context_length() - 1);
  ASSERT_TRUE(ids.ok());
  EXPECT_FALSE(ids.value().empty());
  // Without a limit (count_tokens) a long prompt is counted, not refused.
  req.prompt_text = std::string(64u << 10, 'a');
  auto counted = PromptTokens(ctx, model, req);
  ASSERT_TRUE(counted.ok());
  EXPECT_GE(static_cast<int64_t>(counted.value().size()), MinTokensForBytes(req.prompt_text.size(), backend_->max_token_bytes()));
}

}  // namespace
}  // namespace ember::server
