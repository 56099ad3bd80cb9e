#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/completion_request.h"

namespace ember::server {
namespace {

using nlohmann::json;

json Chat(json extra = json::object()) {
  json body = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  body.update(extra);
  return body;
}

// Parses a chat request expected to fail; returns the error.
ApiError ChatError(json body) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
  EXPECT_FALSE(r.ok()) << body.dump();
  return r.ok() ? ApiError{} : r.error();
}

TEST(OpenAIChatRequest, EveryFieldIsRead) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({
      {"max_tokens", 12}, {"temperature", 0.5}, {"top_p", 0.9}, {"top_k", 40}, {"min_p", 0.05},
      {"seed", 42}, {"stop", {"a", "b"}}, {"presence_penalty", 0.1}, {"frequency_penalty", 0.2},
      {"repetition_penalty", 1.1}, {"logit_bias", {{"15", -100}}}, {"logprobs", true}, {"top_logprobs", 3},
      {"user", "u1"}, {"cache_salt", "tenant-a"}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
      {"some_unknown_field", {1, 2, 3}}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const CompletionRequest& q = r.value();
  EXPECT_EQ(q.max_tokens, 12);
  EXPECT_FLOAT_EQ(q.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(q.sampling.top_p, 0.9f);
  EXPECT_EQ(q.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(q.sampling.min_p, 0.05f);
  EXPECT_EQ(q.sampling.seed, 42u);
  EXPECT_EQ(q.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(q.sampling.presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(q.sampling.frequency_penalty, 0.2f);
  EXPECT_FLOAT_EQ(q.sampling.repetition_penalty, 1.1f);
  ASSERT_EQ(q.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(q.sampling.logit_bias[0].first, 15);
  EXPECT_FLOAT_EQ(q.sampling.logit_bias[0].second, -100.0f);
  EXPECT_TRUE(q.logprobs);
  EXPECT_EQ(q.top_logprobs, 3);
  EXPECT_EQ(q.user, "u1");
  EXPECT_EQ(q.cache_salt, "tenant-a");
  EXPECT_TRUE(q.stream);
  EXPECT_TRUE(q.include_usage);
  ASSERT_EQ(q.messages.size(), 1u);
  EXPECT_EQ(q.messages[0].role, "user");
  EXPECT_EQ(q.messages[0].content, "hi");
}

TEST(OpenAIChatRequest, MaxCompletionTokensAndStopString) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({{"max_completion_tokens", 7}, {"stop", "END"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().max_tokens, 7);
  EXPECT_EQ(r.value().stop, std::vector<std::string>{"END"});
}

TEST(OpenAIChatRequest, NullMeansDefault) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({{"temperature", nullptr}, {"stop", nullptr}}));
  ASSERT_TRUE(r.ok());
  EXPECT_FLOAT_EQ(r.value().sampling.temperature, 1.0f);
  EXPECT_TRUE(r.value().stop.empty());
}

TEST(OpenAIChatRequest, ContentPartsAreConcatenated) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(
      {{"messages",
        {{{"role", "system"}, {"content", "be brief"}},
         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().messages[1].content, "ab");
}

TEST(OpenAIChatRequest, ToolsAndToolMessagesRoundTrip) {
  json body = {
      {"messages",
       {{{"role", "user"}, {"content", "weather?"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"}, {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}}},
      {"tools",
       {{{"type", "function"},
         {"function", {{"name", "get_weather"}, {"description", "d"}, {"parameters", {{"type", "object"}}}}}}}}};
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = r.value().messages;
  ASSERT_EQ(m.size(), 3u);
  ASSERT_EQ(m[1].tool_calls.size(), 1u);
  EXPECT_EQ(m[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(m[1].tool_calls[0].arguments_json, "{\"city\":\"Paris\"}");
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, "call_1");
  ASSERT_EQ(r.value().tools.size(), 1u);
  EXPECT_EQ(r.value().tools[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.value().tools[0].parameters_json), json({{"type", "object"}}));
  body["tool_choice"] = "none";
  EXPECT_TRUE(ParseOpenAIChatRequest(body).value().tools.empty());
}

struct WrongType {
  const char* field;
  json value;
  const char* param;
};

class OpenAIWrongType : public ::testing::TestWithParam<WrongType> {};

TEST_P(OpenAIWrongType, Is400NamingTheField) {
  const WrongType& w = GetParam();
  ApiError e = ChatError(Chat({{w.field, w.value}}));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_EQ(e.param, w.param);
  EXPECT_NE(e.message.find(w.param), std::string::npos) << e.message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, OpenAIWrongType,
    ::testing::Values(WrongType{"max_tokens", "12", "max_tokens"}, WrongType{"max_tokens", 1.5, "max_tokens"},
                      WrongType{"max_tokens", 0, "max_tokens"}, WrongType{"max_completion_tokens", true, "max_completion_tokens"},
                      WrongType{"temperature", "hot", "temperature"}, WrongType{"temperature", 3, "temperature"},
                      WrongType{"top_p", "x", "top_p"}, WrongType{"top_k", 1.5, "top_k"},
                      WrongType{"min_p", {1}, "min_p"}, WrongType{"seed", "42", "seed"},
                      WrongType{"stop", 5, "stop"}, WrongType{"stop", json::array({"a", 1}), "stop[1]"},
                      WrongType{"presence_penalty", "0", "presence_penalty"},
                      WrongType{"frequency_penalty", 9, "frequency_penalty"},
                      WrongType{"repetition_penalty", "1", "repetition_penalty"},
                      WrongType{"logit_bias", "x", "logit_bias"}, WrongType{"logit_bias", {{"abc", 1}}, "logit_bias.abc"},
                      WrongType{"logprobs", "yes", "logprobs"}, WrongType{"top_logprobs", 50, "top_logprobs"},
                      WrongType{"user", 7, "user"}, WrongType{"cache_salt", 7, "cache_salt"},
                      WrongType{"stream", "true", "stream"},
                      WrongType{"stream_options", {{"include_usage", "yes"}}, "stream_options.include_usage"},
                      WrongType{"n", 2, "n"}, WrongType{"messages", "hi", "messages"},
                      WrongType{"messages", json::array(), "messages"},
                      WrongType{"messages", {{{"role", "user"}, {"content", 5}}}, "messages[0].content"},
                      WrongType{"messages", {{{"role", "robot"}, {"content", "x"}}}, "messages[0].role"},
                      WrongType{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}},
                                "messages[0].content[0]"},
                      WrongType{"tools", {{{"type", "function"}}}, "tools[0].function"},
                      WrongType{"tools", "x", "tools"}));

TEST(OpenAIChatRequest, BodyMustBeObject) {
  EXPECT_EQ(ChatError(json::array()).http_status, 400);
}

TEST(OpenAICompletionRequest, PromptForms) {
  auto r = ParseOpenAICompletionRequest({{"prompt", "hello"}, {"logprobs", 2}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().prompt_text, "hello");
  EXPECT_TRUE(r.value().logprobs);
  EXPECT_EQ(r.value().top_logprobs, 2);
  auto ids = ParseOpenAICompletionRequest({{"prompt", {1, 2, 3}}});
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids.value().prompt_is_ids);
  EXPECT_EQ(ids.value().prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  auto bad = ParseOpenAICompletionRequest({{"prompt", 5}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "prompt");
  auto missing = ParseOpenAICompletionRequest(json::object());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().param, "prompt");
}

TEST(AnthropicRequest, MapsSystemBlocksAndTools) {
  json body = {
      {"model", "m"},
      {"max_tokens", 64},
      {"system", {{{"type", "text"}, {"text", "sys"}}}},
      {"stop_sequences", {"X"}},
      {"metadata", {{"user_id", "u"}}},
      {"messages",
       {{{"role", "user"}, {"content", "weather?"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "text"}, {"text", "checking"}},
           {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Rome"}}}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "sunny"}},
           {{"type", "text"}, {"text", "thanks"}}}}}}},
      {"tools", {{{"name", "get_weather"}, {"description", "d"}, {"input_schema", {{"type", "object"}}}}}}};
  auto r = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = r.value().messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "sys");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, "checking");
  ASSERT_EQ(m[2].tool_calls.size(), 1u);
  EXPECT_EQ(m[2].tool_calls[0].id, "toolu_1");
  EXPECT_EQ(json::parse(m[2].tool_calls[0].arguments_json), json({{"city", "Rome"}}));
  EXPECT_EQ(m[3].role, "tool");
  EXPECT_EQ(m[3].tool_call_id, "toolu_1");
  EXPECT_EQ(m[3].content, "sunny");
  EXPECT_EQ(m[4].content, "thanks");
  EXPECT_EQ(r.value().max_tokens, 64);
  EXPECT_EQ(r.value().stop, std::vector<std::string>{"X"});
  EXPECT_EQ(r.value().user, "u");
  ASSERT_EQ(r.value().tools.size(), 1u);
}

// The salt of /v1/messages is the same body field as OpenAI's (docs/server.md "Tenants"); metadata.user_id
// is Anthropic's abuse-tracking id and stays just that.
TEST(AnthropicRequest, CacheSaltIsTheSameBodyFieldAsOpenAIsAndUserIdIsNotIt) {
  json body = {{"max_tokens", 5}, {"cache_salt", "tenant-a"}, {"metadata", {{"user_id", "u1"}}},
               {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  auto r = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().cache_salt, "tenant-a");
  EXPECT_EQ(r.value().user, "u1");
  body.erase("cache_salt");
  EXPECT_EQ(ParseAnthropicRequest(body, true).value().cache_salt, "");
  body["cache_salt"] = 7;
  EXPECT_EQ(ParseAnthropicRequest(body, true).error().param, "cache_salt");
}

TEST(AnthropicRequest, ErrorsNameTheField) {
  json ok = {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  EXPECT_TRUE(ParseAnthropicRequest(ok, true).ok());
  json no_max = ok;
  no_max.erase("max_tokens");
  EXPECT_EQ(ParseAnthropicRequest(no_max, true).error().param, "max_tokens");
  EXPECT_TRUE(ParseAnthropicRequest(no_max, false).ok());
  json bad_role = ok;
  bad_role["messages"][0]["role"] = "system";
  EXPECT_EQ(ParseAnthropicRequest(bad_role, true).error().param, "messages[0].role");
  json bad_temp = ok;
  bad_temp["temperature"] = "warm";
  EXPECT_EQ(ParseAnthropicRequest(bad_temp, true).error().param, "temperature");
  json bad_block = ok;
  bad_block["messages"][0]["content"] = {{{"type", "image"}}};
  EXPECT_EQ(ParseAnthropicRequest(bad_block, true).error().param, "messages[0].content[0]");
}

TEST(ErrorBody, Shapes) {
  ApiError e = InvalidRequest("'temperature' must be a number", "temperature");
  EXPECT_EQ(ErrorBody(e, ApiFlavor::kOpenAI),
            json::parse(R"({"error":{"message":"'temperature' must be a number","type":"invalid_request_error",
                            "param":"temperature","code":null}})"));
  EXPECT_EQ(ErrorBody(e, ApiFlavor::kAnthropic),
            json::parse(R"({"type":"error","error":{"type":"invalid_request_error",
                            "message":"'temperature' must be a number"}})"));
}

}  // namespace
}  // namespace ember::server
