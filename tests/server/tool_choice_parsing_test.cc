// tool_choice / parallel_tool_calls (OpenAI) and tool_choice / disable_parallel_tool_use / is_error
// (Anthropic) into CompletionRequest: what forces a call, what offers no tools, and the 400s.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/completion_request.h"

namespace ember::server {
namespace {

using nlohmann::json;

json OpenAIBody(json tool_choice) {
  json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"tools",
                {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}},
                 {{"type", "function"}, {"function", {{"name", "get_time"}}}}}}};
  if (!tool_choice.is_null()) body["tool_choice"] = std::move(tool_choice);
  return body;
}

json AnthropicBody(json tool_choice) {
  json body = {{"max_tokens", 8},
               {"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"tools", {{{"name", "get_weather"}, {"input_schema", {{"type", "object"}}}}, {{"name", "get_time"}}}}};
  if (!tool_choice.is_null()) body["tool_choice"] = std::move(tool_choice);
  return body;
}

TEST(ToolChoiceParsing, OpenAIChoices) {
  auto parse = [](json tc) { return ParseOpenAIChatRequest(OpenAIBody(std::move(tc))); };
  ApiResult<CompletionRequest> absent = parse(nullptr);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent.value().tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(absent.value().parallel_tool_calls);
  EXPECT_EQ(parse("auto").value().tool_choice, ToolChoice::kAuto);

  ApiResult<CompletionRequest> required = parse("required");
  ASSERT_TRUE(required.ok());
  EXPECT_EQ(required.value().tool_choice, ToolChoice::kRequired);
  EXPECT_EQ(required.value().tools.size(), 2u);

  ApiResult<CompletionRequest> named = parse({{"type", "function"}, {"function", {{"name", "get_time"}}}});
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named.value().tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(named.value().tool_choice_name, "get_time");
  EXPECT_EQ(named.value().tools.size(), 2u);  // every tool stays in the prompt, as OpenAI does

  ApiResult<CompletionRequest> none = parse("none");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value().tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(none.value().tools.empty());  // the template is offered no tools
}

TEST(ToolChoiceParsing, OpenAIParallelToolCalls) {
  json body = OpenAIBody("required");
  body["parallel_tool_calls"] = false;
  EXPECT_FALSE(ParseOpenAIChatRequest(body).value().parallel_tool_calls);
  body["parallel_tool_calls"] = true;
  EXPECT_TRUE(ParseOpenAIChatRequest(body).value().parallel_tool_calls);
  body["parallel_tool_calls"] = nullptr;  // null: the default
  EXPECT_TRUE(ParseOpenAIChatRequest(body).value().parallel_tool_calls);
  body["parallel_tool_calls"] = "no";
  ApiResult<CompletionRequest> bad = ParseOpenAIChatRequest(body);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "parallel_tool_calls");
}

struct BadChoice {
  json tool_choice;
  bool drop_tools;
  std::string param;
  std::string says;  // part of the message
};

TEST(ToolChoiceParsing, OpenAIRefusals) {
  const std::vector<BadChoice> cases = {
      {{{"type", "function"}, {"function", {{"name", "get_stock"}}}}, false, "tool_choice", "'get_stock'"},
      {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}, true, "tool_choice", "'get_weather'"},
      {"required", true, "tool_choice", "no tools"},
      {"sometimes", false, "tool_choice", "none, auto, required"},
      {{{"type", "allowed_tools"}}, false, "tool_choice.type", "\"function\""},
      {{{"type", "function"}}, false, "tool_choice.function", "required"},
      {{{"type", "function"}, {"function", json::object()}}, false, "tool_choice.function.name", "required"},
      {{{"type", "function"}, {"function", {{"name", 7}}}}, false, "tool_choice.function.name", "string"},
      {7, false, "tool_choice", "string or an object"},
  };
  for (const BadChoice& c : cases) {
    json body = OpenAIBody(c.tool_choice);
    if (c.drop_tools) body.erase("tools");
    ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
    ASSERT_FALSE(r.ok()) << c.tool_choice.dump();
    EXPECT_EQ(r.error().http_status, 400);
    EXPECT_EQ(r.error().param, c.param) << c.tool_choice.dump() << ": " << r.error().message;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

TEST(ToolChoiceParsing, AnthropicChoices) {
  auto parse = [](json tc) { return ParseAnthropicRequest(AnthropicBody(std::move(tc)), true); };
  ApiResult<CompletionRequest> absent = parse(nullptr);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent.value().tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(absent.value().parallel_tool_calls);

  ApiResult<CompletionRequest> any = parse({{"type", "any"}});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any.value().tool_choice, ToolChoice::kRequired);

  ApiResult<CompletionRequest> tool = parse({{"type", "tool"}, {"name", "get_weather"}, {"disable_parallel_tool_use", true}});
  ASSERT_TRUE(tool.ok()) << tool.error().message;
  EXPECT_EQ(tool.value().tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(tool.value().tool_choice_name, "get_weather");
  EXPECT_FALSE(tool.value().parallel_tool_calls);

  ApiResult<CompletionRequest> none = parse({{"type", "none"}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value().tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(none.value().tools.empty());  // as OpenAI's "none": no tools in the prompt

  EXPECT_FALSE(parse({{"type", "auto"}, {"disable_parallel_tool_use", true}}).value().parallel_tool_calls);
}

TEST(ToolChoiceParsing, AnthropicRefusals) {
  const std::vector<BadChoice> cases = {
      {{{"type", "tool"}, {"name", "get_stock"}}, false, "tool_choice", "'get_stock'"},
      {{{"type", "tool"}}, false, "tool_choice.name", "required"},
      {{{"type", "any"}}, true, "tool_choice", "no tools"},
      {{{"type", "tool"}, {"name", "get_weather"}}, true, "tool_choice", "'get_weather'"},
      {{{"type", "some"}}, false, "tool_choice.type", "auto, any, tool or none"},
      {{{"type", "any"}, {"disable_parallel_tool_use", "yes"}}, false, "tool_choice.disable_parallel_tool_use",
       "boolean"},
  };
  for (const BadChoice& c : cases) {
    json body = AnthropicBody(c.tool_choice);
    if (c.drop_tools) body.erase("tools");
    ApiResult<CompletionRequest> r = ParseAnthropicRequest(body, true);
    ASSERT_FALSE(r.ok()) << c.tool_choice.dump();
    EXPECT_EQ(r.error().http_status, 400);
    EXPECT_EQ(r.error().param, c.param) << c.tool_choice.dump() << ": " << r.error().message;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

// is_error: true reaches the template as a tool message whose text starts with "Error: " (no chat
// template has a field for it); a successful result is unchanged.
TEST(ToolChoiceParsing, AnthropicErrorResultsAreMarked) {
  json body = AnthropicBody(nullptr);
  body["messages"] = json::parse(R"([
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}},
                                      {"type": "tool_use", "id": "t2", "name": "get_time", "input": {}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "city not found"},
      {"type": "tool_result", "tool_use_id": "t2", "is_error": false, "content": [{"type": "text", "text": "noon"}]}]}])");
  ApiResult<CompletionRequest> r = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::vector<ChatMessage>& m = r.value().messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, "t1");
  EXPECT_EQ(m[2].content, "Error: city not found");
  EXPECT_EQ(m[3].tool_call_id, "t2");
  EXPECT_EQ(m[3].content, "noon");
}

}  // namespace
}  // namespace ember::server
