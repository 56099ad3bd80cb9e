// The Anthropic Messages parts beyond text and tools: thinking history, the thinking switch,
// metadata.user_id, stop_sequences, empty conversations; and how earlier reasoning reaches a template
// that renders it (Qwen3's) or one that does not (the tiny model's own).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/engine_backend.h"
#include "support/test_support.h"
#include "tiny_model.h"

namespace ember::server {
namespace {

using nlohmann::json;

json WithThinking(json thinking_block, const std::string& role = "assistant") {
  return {{"max_tokens", 8},
          {"messages",
           {{{"role", "user"}, {"content", "fix the bug"}},
            {{"role", role},
             {"content", {thinking_block, {{"type", "tool_use"}, {"id", "c1"}, {"name", "ls"}, {"input", json::object()}}}}},
            {{"role", "user"}, {"content", {{{"type", "tool_result"}, {"tool_use_id", "c1"}, {"content", "main.py"}}}}}}}};
}

TEST(AnthropicThinking, HistoryBlocksBecomeReasoningContent) {
  auto r = ParseAnthropicRequest(
      WithThinking({{"type", "thinking"}, {"thinking", "check the layout first"}, {"signature", "sig"}}), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::vector<ChatMessage>& m = r.value().messages;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].role, "assistant");
  EXPECT_EQ(m[1].reasoning_content, "check the layout first");
  ASSERT_EQ(m[1].tool_calls.size(), 1u);
  // redacted_thinking is another provider's ciphertext: dropped.
  auto redacted = ParseAnthropicRequest(WithThinking({{"type", "redacted_thinking"}, {"data", "opaque"}}), true);
  ASSERT_TRUE(redacted.ok()) << redacted.error().message;
  EXPECT_EQ(redacted.value().messages[1].reasoning_content, "");
  EXPECT_EQ(redacted.value().messages[1].tool_calls.size(), 1u);
  // A turn that is only thinking is kept (its reasoning is all it has).
  json only = {{"max_tokens", 8},
               {"messages", {{{"role", "user"}, {"content", "a"}},
                             {{"role", "assistant"}, {"content", {{{"type", "thinking"}, {"thinking", "hm"}}}}},
                             {{"role", "user"}, {"content", "b"}}}}};
  auto o = ParseAnthropicRequest(only, true);
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o.value().messages.size(), 3u);
  EXPECT_EQ(o.value().messages[1].reasoning_content, "hm");
}

TEST(AnthropicThinking, BadBlocksNameTheField) {
  EXPECT_EQ(ParseAnthropicRequest(WithThinking({{"type", "thinking"}}), true).error().param,
            "messages[1].content[0].thinking");
  EXPECT_EQ(ParseAnthropicRequest(WithThinking({{"type", "thinking"}, {"thinking", 5}}), true).error().param,
            "messages[1].content[0].thinking");
  EXPECT_EQ(ParseAnthropicRequest(WithThinking({{"type", "thinking"}, {"thinking", "x"}, {"signature", 1}}), true)
                .error().param,
            "messages[1].content[0].signature");
  EXPECT_EQ(ParseAnthropicRequest(WithThinking({{"type", "redacted_thinking"}, {"data", 1}}), true).error().param,
            "messages[1].content[0].data");
  EXPECT_EQ(ParseAnthropicRequest(WithThinking({{"type", "thinking"}, {"thinking", "x"}}, "user"), true).error().param,
            "messages[1].content[0]");
}

TEST(AnthropicThinking, TheSwitchReachesTemplatesAsEnableThinking) {
  json body = {{"max_tokens", 8}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 50}};
  auto on = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(on.ok());
  ASSERT_EQ(on.value().template_kwargs.size(), 1u);
  EXPECT_EQ(on.value().template_kwargs[0], (std::pair<std::string, std::string>{"enable_thinking", "true"}));
  body["thinking"] = {{"type", "disabled"}};
  EXPECT_EQ(ParseAnthropicRequest(body, true).value().template_kwargs[0].second, "false");
  body["thinking"] = {{"type", "sometimes"}};
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "thinking.type");
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", "lots"}};
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "thinking.budget_tokens");
  body["thinking"] = "on";
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "thinking");
}

TEST(AnthropicMetadata, UserIdIsCheckedAndIsNotATenant) {
  json body = {{"max_tokens", 8}, {"metadata", {{"user_id", "user-1"}}}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  auto r = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().user, "user-1");
  EXPECT_EQ(r.value().cache_salt, "");  // users of one key share its cache; cache_salt separates
  body["metadata"]["user_id"] = std::string(257, 'u');
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "metadata.user_id");
  body["metadata"]["user_id"] = 12;
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "metadata.user_id");
}

TEST(AnthropicRequestShape, EmptyConversationAndStopSequences) {
  auto empty = ParseAnthropicRequest({{"max_tokens", 8}, {"messages", json::array()}}, true);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().http_status, 400);
  EXPECT_EQ(empty.error().param, "messages");
  EXPECT_FALSE(ParseAnthropicRequest({{"messages", json::array()}}, false).ok());  // count_tokens too
  auto stops = ParseAnthropicRequest(
      {{"max_tokens", 8}, {"stop_sequences", {"###", "END"}}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, true);
  ASSERT_TRUE(stops.ok());
  EXPECT_EQ(stops.value().stop, (std::vector<std::string>{"###", "END"}));
}

class ReasoningTemplateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("m.gguf"));
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::unique_ptr<InferenceBackend> Backend(const std::string& template_file) {
    ServeOptions o;
    o.model_path = dir_->file("m.gguf");
    o.prompt_cache_bytes = "16M";
    o.parallel = 1;
    o.chat_template_file = template_file;
    auto b = CreateEngineBackend(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }
  static testing::TempDir* dir_;
};
testing::TempDir* ReasoningTemplateTest::dir_ = nullptr;

TEST_F(ReasoningTemplateTest, RenderedByTemplatesThatKnowItDroppedByOthers) {
  auto parsed = ParseAnthropicRequest(
      WithThinking({{"type", "thinking"}, {"thinking", "REASONING-MARK"}, {"signature", "s"}}), true);
  ASSERT_TRUE(parsed.ok());
  // Qwen3's template renders an earlier turn's reasoning_content inside <think>, after the last user query.
  parsed.value().messages.push_back({"user", "and now?", {}, "", ""});
  const ChatTemplateInput in{parsed.value().messages, {}, true, {}};
  auto qwen = Backend(std::string(EMBER_SOURCE_DIR) + "/tests/template/templates/qwen3.jinja");
  ASSERT_NE(qwen, nullptr);
  EXPECT_NE(qwen->chat_template().find("reasoning_content"), std::string::npos);
  auto shown = qwen->ApplyChatTemplate(in);
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_EQ(shown->find("REASONING-MARK"), std::string::npos) << "before the last user turn, Qwen3 drops it";
  // ... and keeps it for the turns after the last user message (an agent's tool loop).
  parsed.value().messages.pop_back();
  auto loop = qwen->ApplyChatTemplate({parsed.value().messages, {}, true, {}});
  ASSERT_TRUE(loop.ok()) << loop.status().ToString();
  EXPECT_NE(loop->find("<think>\nREASONING-MARK"), std::string::npos) << *loop;
  // The model's own template never reads reasoning_content: the text does not appear.
  auto plain = Backend("");
  ASSERT_NE(plain, nullptr);
  auto dropped = plain->ApplyChatTemplate({parsed.value().messages, {}, true, {}});
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(dropped->find("REASONING-MARK"), std::string::npos);
  // More tokens with the reasoning than without, where it is rendered (what count_tokens reports).
  auto with_ids = qwen->TokenizeChat({parsed.value().messages, {}, true, {}});
  std::vector<ChatMessage> bare = parsed.value().messages;
  bare[1].reasoning_content.clear();
  auto without_ids = qwen->TokenizeChat({bare, {}, true, {}});
  ASSERT_TRUE(with_ids.ok() && without_ids.ok());
  EXPECT_GT(with_ids->size(), without_ids->size());
}

}  // namespace
}  // namespace ember::server
