// The grammar of a forced tool call (tool_grammar.h), checked by matching: every call the family's
// syntax and the tools' schemas allow is a sentence, everything else is not.
#include "server/tool_grammar.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace ember::server {
namespace {

using nlohmann::json;

CompletionRequest Forced(ToolChoice choice, std::string name = "", bool parallel = true) {
  CompletionRequest req;
  req.tools = {{"get_weather", "d",
                R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},)"
                R"("required":["city"],"additionalProperties":false})"},
               {"get_time", "d", "{}"}};
  req.tool_choice = choice;
  req.tool_choice_name = std::move(name);
  req.parallel_tool_calls = parallel;
  return req;
}

std::shared_ptr<const grammar::Grammar> Build(ToolCallSyntax syntax, const CompletionRequest& req) {
  ApiResult<std::string> gbnf = ToolCallGbnf(syntax, req);
  EXPECT_TRUE(gbnf.ok()) << (gbnf.ok() ? "" : gbnf.error().message);
  if (!gbnf.ok()) return nullptr;
  StatusOr<std::shared_ptr<const grammar::Grammar>> g = grammar::ParseGbnf(gbnf.value());
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf.value();
  return g.ok() ? std::move(g).value() : nullptr;
}

const char* kWeather = R"({"name": "get_weather", "parameters": {"city": "Paris"}})";
const char* kWeatherUnit = R"({"name": "get_weather", "parameters": {"city": "Oslo", "unit": "c"}})";
const char* kTime = R"({"name": "get_time", "parameters": {}})";
const char* kTimeArgs = R"({"name": "get_time", "parameters": {"zone": ["utc", 1]}})";

TEST(ToolGrammar, LlamaRequiredIsOneCallOfAnyTool) {
  auto g = Build(ToolCallSyntax::kLlama3Json, Forced(ToolChoice::kRequired));
  ASSERT_NE(g, nullptr);
  for (const char* ok : {kWeather, kWeatherUnit, kTime, kTimeArgs}) EXPECT_TRUE(grammar::Matches(*g, ok)) << ok;
  const std::vector<std::string> bad = {
      R"({"name": "get_stock", "parameters": {}})",                      // not offered
      R"({"name": "get_weather", "parameters": {}})",                    // city is required
      R"({"name": "get_weather", "parameters": {"city": 7}})",           // city is a string
      R"({"name": "get_weather", "parameters": {"city": "x", "unit": "k"}})",  // not in the enum
      R"({"name": "get_weather", "parameters": {"city": "x", "extra": 1}})",   // additionalProperties
      R"({"name": "get_time", "arguments": {}})",                        // Llama's key is "parameters"
      R"({"name": "get_time", "parameters": []})",                       // arguments are an object
      std::string(kTime) + kTime,                                         // one call per turn
      std::string("Sure! ") + kTime,                                      // nothing before the call
      std::string("<tool_call>\n") + R"({"name": "get_time", "arguments": {}})" + "\n</tool_call>",
      "",
  };
  for (const std::string& b : bad) EXPECT_FALSE(grammar::Matches(*g, b)) << b;
  EXPECT_TRUE(grammar::IsPrefix(*g, R"({"name": "get_w)"));
  EXPECT_FALSE(grammar::IsPrefix(*g, R"({"name": "get_s)"));
}

TEST(ToolGrammar, LlamaIgnoresParallelCalls) {
  // The Llama 3.x templates refuse more than one call per assistant turn.
  auto g = Build(ToolCallSyntax::kLlama3Json, Forced(ToolChoice::kRequired, "", /*parallel=*/true));
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(grammar::Matches(*g, std::string(kTime) + "\n" + kTime));
}

TEST(ToolGrammar, NamedFunctionOnlyThatOne) {
  auto g = Build(ToolCallSyntax::kLlama3Json, Forced(ToolChoice::kFunction, "get_weather"));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::Matches(*g, kWeather));
  EXPECT_FALSE(grammar::Matches(*g, kTime));
  auto h = Build(ToolCallSyntax::kHermes, Forced(ToolChoice::kFunction, "get_time"));
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(grammar::Matches(*h, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar::Matches(
      *h, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>"));
}

std::string Block(const std::string& name, const std::string& args) {
  return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

TEST(ToolGrammar, HermesBlocks) {
  auto g = Build(ToolCallSyntax::kHermes, Forced(ToolChoice::kRequired));
  ASSERT_NE(g, nullptr);
  const std::string w = Block("get_weather", R"({"city": "Paris"})");
  const std::string t = Block("get_time", "{}");
  EXPECT_TRUE(grammar::Matches(*g, w));
  EXPECT_TRUE(grammar::Matches(*g, t));
  EXPECT_TRUE(grammar::Matches(*g, w + "\n" + t));        // parallel: joined as the templates join them
  EXPECT_TRUE(grammar::Matches(*g, w + "\n" + t + "\n" + w));
  EXPECT_FALSE(grammar::Matches(*g, ""));                  // at least one call
  EXPECT_FALSE(grammar::Matches(*g, w + t));               // blocks are separated by a newline
  EXPECT_FALSE(grammar::Matches(*g, "I will call it.\n" + w));
  EXPECT_FALSE(grammar::Matches(*g, Block("get_weather", "{}")));
  EXPECT_FALSE(grammar::Matches(*g, Block("get_stock", "{}")));
  EXPECT_FALSE(grammar::Matches(*g, "<tool_call>\n{\"name\": \"get_time\", \"parameters\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar::Matches(*g, kTime));               // a bare JSON call is Llama's, not Hermes'
}

TEST(ToolGrammar, HermesSingleCallWithoutParallel) {
  auto g = Build(ToolCallSyntax::kHermes, Forced(ToolChoice::kRequired, "", /*parallel=*/false));
  ASSERT_NE(g, nullptr);
  const std::string t = Block("get_time", "{}");
  EXPECT_TRUE(grammar::Matches(*g, t));
  EXPECT_FALSE(grammar::Matches(*g, t + "\n" + t));
}

TEST(ToolGrammar, NamesAreJsonStrings) {
  CompletionRequest req;
  req.tools = {{"say \"hi\"\\now", "d", "{}"}};
  req.tool_choice = ToolChoice::kRequired;
  auto g = Build(ToolCallSyntax::kLlama3Json, req);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::Matches(*g, R"({"name": "say \"hi\"\\now", "parameters": {}})"));
}

TEST(ToolGrammar, UntypedSchemaIsAnObjectSchema) {
  CompletionRequest req;
  req.tools = {{"f", "d", R"({"properties":{"n":{"type":"integer"}},"required":["n"]})"}};
  req.tool_choice = ToolChoice::kRequired;
  auto g = Build(ToolCallSyntax::kLlama3Json, req);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::Matches(*g, R"({"name": "f", "parameters": {"n": 3}})"));
  EXPECT_FALSE(grammar::Matches(*g, R"({"name": "f", "parameters": 3})"));
  EXPECT_FALSE(grammar::Matches(*g, R"({"name": "f", "parameters": {"n": "3"}})"));
}

TEST(ToolGrammar, RefusedSchemasNameToolAndKeyword) {
  CompletionRequest req;
  req.tools = {{"ok", "d", "{}"},
               {"tagger", "d", R"({"type":"object","patternProperties":{"^x":{"type":"string"}}})"}};
  req.tool_choice = ToolChoice::kRequired;
  ApiResult<std::string> r = ToolCallGbnf(ToolCallSyntax::kHermes, req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().http_status, 400);
  EXPECT_EQ(r.error().param, "tools[1].function.parameters");
  EXPECT_NE(r.error().message.find("'tagger'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("patternProperties"), std::string::npos) << r.error().message;

  req.kind = ApiKind::kMessages;  // Anthropic names its field input_schema
  EXPECT_EQ(ToolCallGbnf(ToolCallSyntax::kHermes, req).error().param, "tools[1].input_schema");

  // A named choice only compiles the tool it names.
  req.tool_choice = ToolChoice::kFunction;
  req.tool_choice_name = "ok";
  EXPECT_TRUE(ToolCallGbnf(ToolCallSyntax::kHermes, req).ok());

  CompletionRequest scalar;
  scalar.tools = {{"f", "d", R"({"type":"string"})"}};
  scalar.tool_choice = ToolChoice::kRequired;
  ApiResult<std::string> s = ToolCallGbnf(ToolCallSyntax::kLlama3Json, scalar);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("must describe an object"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace ember::server
