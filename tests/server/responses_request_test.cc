// POST /v1/responses bodies: every input item kind, tools, tool_choice, text.format, the echoed fields, and
// bad shapes -> a 400 naming the field.
#include "server/responses_request.h"

#include <gtest/gtest.h>

#include <string>

namespace ember::server {
namespace {

using nlohmann::json;

ResponsesRequest Ok(const json& body) {
  ApiResult<ResponsesRequest> r = ParseResponsesRequest(body);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : ResponsesRequest{};
}

ApiError Bad(const json& body) {
  ApiResult<ResponsesRequest> r = ParseResponsesRequest(body);
  EXPECT_FALSE(r.ok()) << body.dump();
  return r.ok() ? ApiError{} : r.error();
}

TEST(ResponsesRequest, StringInputIsOneUserTurn) {
  ResponsesRequest r = Ok({{"model", "m"}, {"input", "hello"}});
  ASSERT_EQ(r.completion.messages.size(), 1u);
  EXPECT_EQ(r.completion.messages[0].role, "user");
  EXPECT_EQ(r.completion.messages[0].content, "hello");
  EXPECT_EQ(r.completion.kind, ApiKind::kChat);
  EXPECT_TRUE(r.store);  // the default
  EXPECT_FALSE(r.instructions.has_value());
  EXPECT_TRUE(r.previous_response_id.empty());
}

TEST(ResponsesRequest, MessageItemsWithStringAndPartContent) {
  ResponsesRequest r = Ok({{"input",
                            {{{"role", "developer"}, {"content", "be brief"}},
                             {{"type", "message"}, {"role", "user"},
                              {"content", {{{"type", "input_text"}, {"text", "a"}}, {{"type", "input_text"}, {"text", "b"}}}}},
                             {{"type", "message"}, {"role", "assistant"},
                              {"content", {{{"type", "output_text"}, {"text", "reply"}, {"annotations", json::array()}}}}},
                             {{"role", "system"}, {"content", "sys"}}}}});
  const auto& m = r.completion.messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].role, "system");  // developer is the newer name
  EXPECT_EQ(m[0].content, "be brief");
  EXPECT_EQ(m[1].role, "user");
  EXPECT_EQ(m[1].content, "ab");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, "reply");
  EXPECT_EQ(m[3].role, "system");
}

TEST(ResponsesRequest, FunctionCallsJoinOneAssistantTurnAndOutputsAnswerThem) {
  ResponsesRequest r = Ok({{"input",
                            {{{"role", "user"}, {"content", "weather?"}},
                             {{"type", "function_call"}, {"call_id", "c1"}, {"name", "get"}, {"arguments", "{\"city\":\"Oslo\"}"}},
                             {{"type", "function_call"}, {"call_id", "c2"}, {"name", "put"}, {"arguments", json{{"x", 1}}}},
                             {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "sunny"}},
                             {{"type", "function_call_output"}, {"call_id", "c2"},
                              {"output", {{{"type", "input_text"}, {"text", "done"}}}}}}}});
  const auto& m = r.completion.messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].role, "assistant");
  ASSERT_EQ(m[1].tool_calls.size(), 2u);
  EXPECT_EQ(m[1].tool_calls[0].id, "c1");
  EXPECT_EQ(m[1].tool_calls[0].name, "get");
  EXPECT_EQ(m[1].tool_calls[0].arguments_json, "{\"city\":\"Oslo\"}");
  EXPECT_EQ(m[1].tool_calls[1].arguments_json, "{\"x\":1}");  // an object is accepted as its JSON text
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, "c1");
  EXPECT_EQ(m[2].name, "get");  // the name of the call it answers
  EXPECT_EQ(m[2].content, "sunny");
  EXPECT_EQ(m[3].content, "done");
  EXPECT_EQ(m[3].name, "put");
}

TEST(ResponsesRequest, EchoedAndSamplingFields) {
  ResponsesRequest r = Ok({{"input", "x"},
                           {"instructions", "be nice"},
                           {"max_output_tokens", 7},
                           {"temperature", 0},
                           {"top_p", 0.5},
                           {"store", false},
                           {"stream", true},
                           {"parallel_tool_calls", false},
                           {"previous_response_id", "resp_1"},
                           {"metadata", {{"k", "v"}}},
                           {"user", "u"}});
  EXPECT_EQ(*r.instructions, "be nice");
  EXPECT_EQ(*r.completion.max_tokens, 7);
  EXPECT_EQ(r.completion.sampling.temperature, 0.0f);
  EXPECT_EQ(r.completion.sampling.top_p, 0.5f);
  EXPECT_FALSE(r.store);
  EXPECT_TRUE(r.completion.stream);
  EXPECT_FALSE(r.completion.parallel_tool_calls);
  EXPECT_EQ(r.previous_response_id, "resp_1");
  EXPECT_EQ(r.metadata, (json{{"k", "v"}}));
  EXPECT_EQ(r.user, "u");
}

TEST(ResponsesRequest, FlatFunctionToolsAndToolChoice) {
  const json tool = {{"type", "function"}, {"name", "get"}, {"description", "d"},
                     {"parameters", {{"type", "object"}}}, {"strict", true}};
  ResponsesRequest r = Ok({{"input", "x"}, {"tools", {tool}}});
  ASSERT_EQ(r.completion.tools.size(), 1u);
  EXPECT_EQ(r.completion.tools[0].name, "get");
  EXPECT_EQ(r.completion.tools[0].description, "d");
  EXPECT_EQ(r.completion.tools[0].parameters_json, "{\"type\":\"object\"}");
  EXPECT_EQ(r.completion.tool_choice, ToolChoice::kAuto);
  EXPECT_EQ(r.tools, json::array({tool}));

  EXPECT_EQ(Ok({{"input", "x"}, {"tools", {tool}}, {"tool_choice", "required"}}).completion.tool_choice,
            ToolChoice::kRequired);
  ResponsesRequest forced = Ok({{"input", "x"}, {"tools", {tool}}, {"tool_choice", {{"type", "function"}, {"name", "get"}}}});
  EXPECT_EQ(forced.completion.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(forced.completion.tool_choice_name, "get");
  ResponsesRequest none = Ok({{"input", "x"}, {"tools", {tool}}, {"tool_choice", "none"}});
  EXPECT_EQ(none.completion.tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(none.completion.tools.empty());  // no tools in the prompt, as on the chat route
  EXPECT_EQ(none.tools.size(), 1u);            // but echoed as sent
}

TEST(ResponsesRequest, TextFormat) {
  EXPECT_EQ(Ok({{"input", "x"}, {"text", {{"format", {{"type", "text"}}}}}}).completion.response_format,
            ResponseFormat::kText);
  EXPECT_EQ(Ok({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}}).completion.response_format,
            ResponseFormat::kJsonObject);
  ResponsesRequest s = Ok({{"input", "x"},
                           {"text", {{"format", {{"type", "json_schema"}, {"name", "n"},
                                                 {"schema", {{"type", "object"}}}, {"strict", true}}}}}});
  EXPECT_EQ(s.completion.response_format, ResponseFormat::kJsonSchema);
  EXPECT_EQ(s.completion.json_schema, "{\"type\":\"object\"}");
  EXPECT_EQ(s.completion.json_schema_name, "n");
  EXPECT_TRUE(s.completion.json_schema_strict);
  EXPECT_EQ(s.text_format["type"], "json_schema");
}

TEST(ResponsesRequest, BadShapesNameTheField) {
  struct Case {
    json body;
    std::string param;
  };
  const json tool = {{"type", "function"}, {"name", "get"}};
  const std::vector<Case> cases = {
      {json::array(), ""},
      {{{"model", "m"}}, "input"},
      {{{"input", 3}}, "input"},
      {{{"input", json::array()}}, "input"},
      {{{"input", {7}}}, "input[0]"},
      {{{"input", {{{"role", "robot"}, {"content", "x"}}}}}, "input[0].role"},
      {{{"input", {{{"role", "user"}}}}}, "input[0].content"},
      {{{"input", {{{"role", "user"}, {"content", 5}}}}}, "input[0].content"},
      {{{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "u"}}}}}}}},
       "input[0].content[0].type"},
      {{{"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}}}}}}}}, "input[0].content[0].text"},
      {{{"input", {{{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}}}}}, "input[0].call_id"},
      {{{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"arguments", "{}"}}}}}, "input[0].name"},
      {{{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}}}}}, "input[0].arguments"},
      {{{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", 3}}}}},
       "input[0].arguments"},
      {{{"input", {{{"type", "function_call_output"}, {"call_id", "c"}}}}}, "input[0].output"},
      {{{"input", {{{"type", "function_call_output"}, {"output", "o"}}}}}, "input[0].call_id"},
      {{{"input", {{{"type", "reasoning"}, {"summary", json::array()}}}}}, "input[0].type"},
      {{{"input", "x"}, {"instructions", 1}}, "instructions"},
      {{{"input", "x"}, {"max_output_tokens", 0}}, "max_output_tokens"},
      {{{"input", "x"}, {"temperature", 3}}, "temperature"},
      {{{"input", "x"}, {"store", "yes"}}, "store"},
      {{{"input", "x"}, {"previous_response_id", 5}}, "previous_response_id"},
      {{{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}, "tools[0].type"},
      {{{"input", "x"}, {"tools", {{{"type", "function"}}}}}, "tools[0].name"},
      {{{"input", "x"}, {"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", 1}}}}}, "tools[0].parameters"},
      {{{"input", "x"}, {"tools", {tool}}, {"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"input", "x"}, {"tools", {tool}}, {"tool_choice", {{"type", "function"}}}}, "tool_choice.name"},
      {{{"input", "x"}, {"tools", {tool}}, {"tool_choice", {{"type", "allowed_tools"}}}}, "tool_choice.type"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}, "text.format.type"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}}}}}}, "text.format.schema"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"schema", json::object()}}}}}},
       "text.format.name"},
      {{{"input", "x"}, {"metadata", {{"k", 1}}}}, "metadata.k"},
      {{{"input", "x"}, {"metadata", 3}}, "metadata"},
  };
  for (const Case& c : cases) {
    ApiError e = Bad(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body.dump();
    EXPECT_EQ(e.param, c.param) << c.body.dump() << " -> " << e.message;
    if (!c.param.empty()) {
      EXPECT_NE(e.message.find(c.param), std::string::npos) << e.message;
    }
  }
}

TEST(ResponsesRequest, MetadataLimits) {
  json many = json::object();
  for (char c = 'a'; c < 'a' + 17; ++c) many[std::string(1, c)] = "v";
  EXPECT_EQ(Bad({{"input", "x"}, {"metadata", many}}).param, "metadata");
  EXPECT_EQ(Bad({{"input", "x"}, {"metadata", {{std::string(65, 'k'), "v"}}}}).http_status, 400);
  EXPECT_EQ(Bad({{"input", "x"}, {"metadata", {{"k", std::string(513, 'v')}}}}).param, "metadata.k");
}

TEST(ResponsesRequest, DeepArgumentsTextIsRefused) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  ApiError e = Bad({{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", deep}}}}});
  EXPECT_EQ(e.param, "input[0].arguments");
  // Arguments that are not JSON at all stay text (clients send the model's turn back as it was).
  ResponsesRequest r = Ok({{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "not json"}}}}});
  EXPECT_EQ(r.completion.messages[0].tool_calls[0].arguments_json, "not json");
}

}  // namespace
}  // namespace ember::server
