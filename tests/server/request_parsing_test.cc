#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

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

// ---- Every field, every wrong JSON type ----
//
// A body with every field each parser reads; each row names one field (a JSON pointer into that body),
// the `param` a 400 must report, and the JSON types the field takes. Every other type put there must be
// a 400 invalid_request_error naming the field, never an exception (which the server answers with 500).

enum JsonType : unsigned { kStr = 1, kInt = 2, kFloat = 4, kBool = 8, kNull = 16, kArr = 32, kObj = 64 };
constexpr unsigned kNum = kInt | kFloat;

struct FieldRow {
  const char* pointer;
  const char* param;
  unsigned accepts;
};

unsigned TypeOf(const json& v) {
  if (v.is_string()) return kStr;
  if (v.is_number_integer()) return kInt;
  if (v.is_number()) return kFloat;
  if (v.is_boolean()) return kBool;
  if (v.is_null()) return kNull;
  return v.is_array() ? kArr : kObj;
}

const std::vector<json>& Samples() {
  static const std::vector<json> samples = {"x", 7, 2.5, true, nullptr, json::array({1}), json{{"k", 1}}};
  return samples;
}

// Puts every wrong-typed sample at each row's field of `base`; returns how many bodies were checked.
int CheckWrongTypes(const json& base, const std::vector<FieldRow>& rows,
                    const std::function<ApiResult<CompletionRequest>(const json&)>& parse) {
  ApiResult<CompletionRequest> ok = parse(base);
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  int checked = 0;
  for (const FieldRow& row : rows) {
    for (const json& sample : Samples()) {
      if ((TypeOf(sample) & row.accepts) != 0) continue;
      json body = base;
      body[json::json_pointer(row.pointer)] = sample;
      ApiResult<CompletionRequest> r = parse(body);
      ++checked;
      EXPECT_FALSE(r.ok()) << row.pointer << " = " << sample.dump();
      if (r.ok()) continue;
      EXPECT_EQ(r.error().http_status, 400) << row.pointer << " = " << sample.dump();
      EXPECT_EQ(r.error().type, "invalid_request_error");
      EXPECT_EQ(r.error().param, row.param) << row.pointer << " = " << sample.dump() << ": " << r.error().message;
      EXPECT_NE(r.error().message.find(row.param), std::string::npos) << r.error().message;
    }
  }
  return checked;
}

const char* kChatBody = R"({
  "model": "m",
  "messages": [
    {"role": "system", "content": "s"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "u"},
    {"role": "assistant", "content": "c",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "r"}],
  "max_tokens": 5, "max_completion_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": 4, "min_p": 0.1,
  "seed": 1, "repetition_penalty": 1.1, "presence_penalty": 0.1, "frequency_penalty": 0.1,
  "logit_bias": {"5": 1}, "stop": ["x"], "user": "u", "cache_salt": "s", "n": 1, "stream": false,
  "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 2,
  "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
  "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": false}})";

const std::vector<FieldRow> kOpenAICommonRows = {
    {"/model", "model", kStr | kNull},
    {"/max_tokens", "max_tokens", kInt | kNull},
    {"/temperature", "temperature", kNum | kNull},
    {"/top_p", "top_p", kNum | kNull},
    {"/top_k", "top_k", kInt | kNull},
    {"/min_p", "min_p", kNum | kNull},
    {"/seed", "seed", kInt | kNull},
    {"/repetition_penalty", "repetition_penalty", kNum | kNull},
    {"/presence_penalty", "presence_penalty", kNum | kNull},
    {"/frequency_penalty", "frequency_penalty", kNum | kNull},
    {"/logit_bias", "logit_bias", kObj | kNull},
    {"/logit_bias/5", "logit_bias.5", kNum | kNull},
    {"/stop", "stop", kStr | kArr | kNull},
    {"/stop/0", "stop[0]", kStr},
    {"/user", "user", kStr | kNull},
    {"/cache_salt", "cache_salt", kStr | kNull},
    {"/n", "n", kInt | kNull},
    {"/stream", "stream", kBool | kNull},
    {"/stream_options", "stream_options", kObj | kNull},
    {"/stream_options/include_usage", "stream_options.include_usage", kBool | kNull},
};

TEST(WrongTypes, EveryOpenAIChatField) {
  std::vector<FieldRow> rows = kOpenAICommonRows;
  rows.insert(rows.end(), {
      {"/max_completion_tokens", "max_completion_tokens", kInt | kNull},
      {"/logprobs", "logprobs", kBool | kNull},
      {"/top_logprobs", "top_logprobs", kInt | kNull},
      {"/messages", "messages", kArr},
      {"/messages/0", "messages[0]", kObj},
      {"/messages/0/role", "messages[0].role", kStr},
      {"/messages/0/content", "messages[0].content", kStr | kArr | kNull},
      {"/messages/1/content/0", "messages[1].content[0]", kStr | kObj},
      {"/messages/1/content/0/type", "messages[1].content[0].type", kStr | kNull},
      {"/messages/1/content/0/text", "messages[1].content[0].text", kStr},
      {"/messages/1/name", "messages[1].name", kStr | kNull},
      {"/messages/3/tool_call_id", "messages[3].tool_call_id", kStr | kNull},
      {"/messages/2/tool_calls", "messages[2].tool_calls", kArr | kNull},
      {"/messages/2/tool_calls/0", "messages[2].tool_calls[0]", kObj},
      {"/messages/2/tool_calls/0/id", "messages[2].tool_calls[0].id", kStr | kNull},
      {"/messages/2/tool_calls/0/type", "messages[2].tool_calls[0].type", kStr | kNull},
      {"/messages/2/tool_calls/0/function", "messages[2].tool_calls[0].function", kObj},
      {"/messages/2/tool_calls/0/function/name", "messages[2].tool_calls[0].function.name", kStr | kNull},
      {"/messages/2/tool_calls/0/function/arguments", "messages[2].tool_calls[0].function.arguments",
       kStr | kObj | kNull},
      {"/tools", "tools", kArr | kNull},
      {"/tools/0", "tools[0]", kObj},
      {"/tools/0/type", "tools[0].type", kStr | kNull},
      {"/tools/0/function", "tools[0].function", kObj},
      {"/tools/0/function/name", "tools[0].function.name", kStr},
      {"/tools/0/function/description", "tools[0].function.description", kStr | kNull},
      {"/tools/0/function/parameters", "tools[0].function.parameters", kObj | kNull},
      {"/tool_choice", "tool_choice", kStr | kObj | kNull},
      {"/chat_template_kwargs", "chat_template_kwargs", kObj | kNull},
  });
  EXPECT_GT(CheckWrongTypes(json::parse(kChatBody), rows, ParseOpenAIChatRequest), 200);
}

TEST(WrongTypes, EveryOpenAICompletionField) {
  std::vector<FieldRow> rows = kOpenAICommonRows;
  rows.insert(rows.end(), {{"/logprobs", "logprobs", kInt | kNull}, {"/prompt", "prompt", kStr | kArr},
                           {"/prompt/0", "prompt", kStr | kInt}});
  json base = json::parse(kChatBody);
  base.erase("messages");
  for (const char* chat_only : {"max_completion_tokens", "top_logprobs", "tools", "tool_choice", "chat_template_kwargs"}) {
    base.erase(chat_only);
  }
  base["prompt"] = {"hi"};
  base["logprobs"] = 2;
  EXPECT_GT(CheckWrongTypes(base, rows, ParseOpenAICompletionRequest), 100);
}

TEST(WrongTypes, EveryAnthropicField) {
  const json base = json::parse(R"({
    "model": "m", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": 3, "min_p": 0.1, "seed": 3,
    "repetition_penalty": 1.1, "stream": false, "cache_salt": "s", "stop_sequences": ["x"],
    "system": [{"type": "text", "text": "s"}], "metadata": {"user_id": "u"},
    "tool_choice": {"type": "tool", "name": "f"},
    "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "hi"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": false,
                                    "content": [{"type": "text", "text": "r"}]}]}]})");
  const std::vector<FieldRow> rows = {
      {"/model", "model", kStr | kNull},
      {"/max_tokens", "max_tokens", kInt},
      {"/temperature", "temperature", kNum | kNull},
      {"/top_p", "top_p", kNum | kNull},
      {"/top_k", "top_k", kInt | kNull},
      {"/min_p", "min_p", kNum | kNull},
      {"/seed", "seed", kInt | kNull},
      {"/repetition_penalty", "repetition_penalty", kNum | kNull},
      {"/stream", "stream", kBool | kNull},
      {"/cache_salt", "cache_salt", kStr | kNull},
      {"/stop_sequences", "stop_sequences", kStr | kArr | kNull},
      {"/stop_sequences/0", "stop_sequences[0]", kStr},
      {"/system", "system", kStr | kArr | kNull},
      {"/system/0", "system[0]", kObj},
      {"/system/0/type", "system[0].type", kStr},
      {"/system/0/text", "system[0].text", kStr},
      {"/metadata", "metadata", kObj | kNull},
      {"/metadata/user_id", "metadata.user_id", kStr | kNull},
      {"/tool_choice", "tool_choice", kObj | kNull},
      {"/tool_choice/type", "tool_choice.type", kStr | kNull},
      {"/tool_choice/name", "tool_choice.name", kStr | kNull},
      {"/tools", "tools", kArr | kNull},
      {"/tools/0", "tools[0]", kObj},
      {"/tools/0/name", "tools[0].name", kStr},
      {"/tools/0/description", "tools[0].description", kStr | kNull},
      {"/tools/0/input_schema", "tools[0].input_schema", kObj | kNull},
      {"/messages", "messages", kArr},
      {"/messages/0", "messages[0]", kObj},
      {"/messages/0/role", "messages[0].role", kStr},
      {"/messages/0/content", "messages[0].content", kStr | kArr},
      {"/messages/0/content/0", "messages[0].content[0]", kObj},
      {"/messages/0/content/0/type", "messages[0].content[0].type", kStr},
      {"/messages/0/content/0/text", "messages[0].content[0].text", kStr},
      {"/messages/1/content/0/id", "messages[1].content[0].id", kStr | kNull},
      {"/messages/1/content/0/name", "messages[1].content[0].name", kStr},
      {"/messages/1/content/0/input", "messages[1].content[0].input", kObj | kNull},
      {"/messages/2/content/0/tool_use_id", "messages[2].content[0].tool_use_id", kStr | kNull},
      {"/messages/2/content/0/is_error", "messages[2].content[0].is_error", kBool | kNull},
      {"/messages/2/content/0/content", "messages[2].content[0].content", kStr | kArr | kNull},
      {"/messages/2/content/0/content/0", "messages[2].content[0].content[0]", kObj},
      {"/messages/2/content/0/content/0/text", "messages[2].content[0].content[0].text", kStr},
  };
  auto parse = [](const json& b) { return ParseAnthropicRequest(b, /*require_max_tokens=*/true); };
  EXPECT_GT(CheckWrongTypes(base, rows, parse), 200);
}

// ---- Values that are the right type but hostile ----

TEST(HostileValues, ToolCallArgumentsTextGetsTheBodysDepthLimit) {
  auto with_args = [](const std::string& args) {
    return Chat({{"messages",
                  {{{"role", "assistant"},
                    {"tool_calls", {{{"id", "c"}, {"function", {{"name", "f"}, {"arguments", args}}}}}}}}}});
  };
  std::string deep;
  for (int i = 0; i < 65; ++i) deep += "{\"a\":";
  deep += "1" + std::string(65, '}');
  ApiError e = ChatError(with_args(deep));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "messages[0].tool_calls[0].function.arguments");
  EXPECT_NE(e.message.find("64"), std::string::npos) << e.message;
  // Not JSON at all stays text: models emit such arguments and clients send them back as they were.
  ApiResult<CompletionRequest> text = ParseOpenAIChatRequest(with_args("{not json"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value().messages[0].tool_calls[0].arguments_json, "{not json");
}

TEST(HostileValues, TokenIdsOutsideInt32AreRefusedNotWrapped) {
  // 2^32 + 5 would wrap to token 5; -1 and 2^31 are no token at all.
  for (const json& id : {json(4294967301ull), json(-1), json(2147483648ull), json(1.0)}) {
    auto r = ParseOpenAICompletionRequest({{"prompt", {1, id}}});
    ASSERT_FALSE(r.ok()) << id.dump();
    EXPECT_EQ(r.error().param, "prompt");
  }
  auto max = ParseOpenAICompletionRequest({{"prompt", {2147483647}}});
  ASSERT_TRUE(max.ok());  // int32 max parses; the backend refuses it as outside the vocabulary
  EXPECT_EQ(max.value().prompt_ids, std::vector<int32_t>{2147483647});
  for (const char* key : {"4294967301", "99999999999999999999999", "-3", "1e3", " 5"}) {
    ApiError e = ChatError(Chat({{"logit_bias", {{key, 1}}}}));
    EXPECT_EQ(e.param, std::string("logit_bias.") + key);
  }
}

TEST(HostileValues, StopStringsAreBoundedInNumberAndLength) {
  EXPECT_TRUE(ParseOpenAIChatRequest(Chat({{"stop", std::string(kMaxStopBytes, 'x')}})).ok());
  ApiError longer = ChatError(Chat({{"stop", std::string(kMaxStopBytes + 1, 'x')}}));
  EXPECT_EQ(longer.param, "stop");
  EXPECT_NE(longer.message.find(std::to_string(kMaxStopBytes)), std::string::npos) << longer.message;
  EXPECT_EQ(ChatError(Chat({{"stop", {"a", std::string(5000, 'y')}}})).param, "stop[1]");
  EXPECT_EQ(ChatError(Chat({{"stop", json(std::vector<std::string>(kMaxStopStrings + 1, "s"))}})).param, "stop");
  json anthropic = {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                    {"stop_sequences", {std::string(kMaxStopBytes + 1, 'z')}}};
  EXPECT_EQ(ParseAnthropicRequest(anthropic, true).error().param, "stop_sequences[0]");
}

TEST(HostileValues, ExtremesOfCountsAreRangeErrors) {
  EXPECT_EQ(ChatError(Chat({{"n", 0}})).param, "n");
  EXPECT_EQ(ChatError(Chat({{"n", 1000000}})).param, "n");
  EXPECT_EQ(ChatError(Chat({{"max_tokens", -1}})).param, "max_tokens");
  EXPECT_EQ(ChatError(Chat({{"max_tokens", 18446744073709551615ull}})).param, "max_tokens");
  EXPECT_EQ(ChatError(Chat({{"max_tokens", 2147483648ll}})).param, "max_tokens");
  EXPECT_TRUE(ParseOpenAIChatRequest(Chat({{"max_tokens", 2147483647}})).ok());  // the context check refuses it
  EXPECT_EQ(ChatError(Chat({{"top_logprobs", -1}})).param, "top_logprobs");
  EXPECT_EQ(ChatError(Chat({{"top_logprobs", 21}})).param, "top_logprobs");
  EXPECT_TRUE(ParseOpenAIChatRequest(Chat({{"top_logprobs", 20}})).ok());
  EXPECT_EQ(ChatError(Chat({{"logit_bias", {{"5", 101}}}})).param, "logit_bias.5");
  EXPECT_EQ(ChatError(Chat({{"tool_choice", "sometimes"}})).param, "tool_choice");
}

TEST(HostileValues, ManyMessagesParse) {
  json body = Chat();
  body["messages"] = json::array();
  for (int i = 0; i < 100000; ++i) body["messages"].push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "x"}});
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().messages.size(), 100000u);
}

}  // namespace
}  // namespace ember::server
