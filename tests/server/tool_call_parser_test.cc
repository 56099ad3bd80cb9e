#include "server/tool_call_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

using nlohmann::json;

TEST(ToolCallParser, PlainTextHasNoCalls) {
  ParsedReply r = ParseToolCalls("The weather is nice.");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "The weather is nice.");
}

TEST(ToolCallParser, QwenSingleCall) {
  ParsedReply r = ParseToolCalls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.tool_calls[0].arguments_json), json({{"city", "Paris"}}));
  EXPECT_EQ(r.content, "Let me check.");
}

TEST(ToolCallParser, QwenTwoCalls) {
  ParsedReply r = ParseToolCalls(
      "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "a");
  EXPECT_EQ(r.tool_calls[1].name, "b");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParser, QwenMalformedBlockStaysContent) {
  const std::string text = "<tool_call>{not json}</tool_call>";
  ParsedReply r = ParseToolCalls(text);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
}

TEST(ToolCallParser, QwenUnterminatedBlockStillParses) {
  // Generation can stop on the end-of-turn token right before </tool_call>.
  ParsedReply r = ParseToolCalls("<tool_call>{\"name\":\"f\",\"arguments\":{\"q\":\"x\"}}");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "f");
}

TEST(ToolCallParser, LlamaJsonReply) {
  ParsedReply r = ParseToolCalls(" {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}} ");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.tool_calls[0].arguments_json), json({{"city", "Oslo"}}));
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParser, LlamaPythonTag) {
  ParsedReply r = ParseToolCalls("<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"ember\"}}");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "search");
}

TEST(ToolCallParser, JsonWithoutNameIsContent) {
  ParsedReply r = ParseToolCalls("{\"answer\": 42}");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "{\"answer\": 42}");
}

TEST(ToolCallParser, StringArgumentsAreKeptAsText) {
  ParsedReply r = ParseToolCalls("{\"name\": \"f\", \"arguments\": \"{\\\"a\\\":1}\"}");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments_json, "{\"a\":1}");
}

}  // namespace
}  // namespace ember::server
