// response_format on the OpenAI routes: what the parser fills (response_format, json_schema, name,
// strict), the 400s for wrong shapes naming the field, and what BuildOutputGrammar makes of it (a schema
// the compiler refuses is a 400 naming the keyword).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "server/completion_request.h"
#include "server/output_constraint.h"
#include "server/fake_backend.h"

namespace ember::server {
namespace {

using nlohmann::json;

json Chat(json extra) {
  json body = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  body.update(extra);
  return body;
}

ApiError ChatError(json body) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
  EXPECT_FALSE(r.ok()) << body.dump();
  return r.ok() ? ApiError{} : r.error();
}

TEST(ResponseFormat, AbsentAndTextConstrainNothing) {
  for (const json& body : {Chat(json::object()), Chat({{"response_format", {{"type", "text"}}}}),
                           Chat({{"response_format", nullptr}})}) {
    ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(body);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().response_format, ResponseFormat::kText);
  }
}

TEST(ResponseFormat, JsonObject) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({{"response_format", {{"type", "json_object"}}}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().response_format, ResponseFormat::kJsonObject);
}

TEST(ResponseFormat, JsonSchemaFillsEveryField) {
  const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}};
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({{"response_format",
      {{"type", "json_schema"},
       {"json_schema", {{"name", "thing"}, {"strict", true}, {"description", "d"}, {"schema", schema}}}}}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const CompletionRequest& q = r.value();
  EXPECT_EQ(q.response_format, ResponseFormat::kJsonSchema);
  EXPECT_EQ(json::parse(q.json_schema), schema);
  EXPECT_EQ(q.json_schema_name, "thing");
  EXPECT_TRUE(q.json_schema_strict);
}

TEST(ResponseFormat, LlamaServerJsonObjectWithSchemaIsASchema) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(
      Chat({{"response_format", {{"type", "json_object"}, {"schema", {{"type", "string"}}}}}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().response_format, ResponseFormat::kJsonSchema);
  EXPECT_EQ(r.value().json_schema, R"({"type":"string"})");
}

TEST(ResponseFormat, JsonSchemaWithoutSchemaIsAnyObject) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(
      Chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().response_format, ResponseFormat::kJsonObject);
}

TEST(ResponseFormat, CompletionsAcceptItToo) {
  ApiResult<CompletionRequest> r = ParseOpenAICompletionRequest(
      {{"prompt", "p"}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "null"}}}}}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().response_format, ResponseFormat::kJsonSchema);
}

TEST(ResponseFormat, WrongShapesNameTheField) {
  struct Case {
    json rf;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"json_object", "response_format"},
      {{{"type", 3}}, "response_format.type"},
      {json::object(), "response_format.type"},
      {{{"type", "xml"}}, "response_format.type"},
      {{{"type", "json_schema"}}, "response_format.json_schema"},
      {{{"type", "json_schema"}, {"json_schema", "s"}}, "response_format.json_schema"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", 1}}}}, "response_format.json_schema.name"},
      {{{"type", "json_schema"}, {"json_schema", {{"strict", "yes"}}}}, "response_format.json_schema.strict"},
      {{{"type", "json_schema"}, {"json_schema", {{"schema", "string"}}}}, "response_format.json_schema.schema"},
      {{{"type", "json_object"}, {"schema", 5}}, "response_format.schema"},
  };
  for (const Case& c : cases) {
    const ApiError e = ChatError(Chat({{"response_format", c.rf}}));
    EXPECT_EQ(e.http_status, 400) << c.rf.dump();
    EXPECT_EQ(e.param, c.param) << c.rf.dump() << ": " << e.message;
    EXPECT_NE(e.message.find(c.param), std::string::npos) << e.message;
  }
}

CompletionRequest Parsed(const json& rf) {
  ApiResult<CompletionRequest> r = ParseOpenAIChatRequest(Chat({{"response_format", rf}}));
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : CompletionRequest{};
}

TEST(ResponseFormatGrammar, UnsupportedKeywordIsA400NamingIt) {
  FakeBackend backend;
  const CompletionRequest req = Parsed(json::parse(R"({"type":"json_schema","json_schema":{"name":"x",
      "schema":{"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}}}})"));
  ApiResult<std::shared_ptr<const grammar::Grammar>> g = BuildOutputGrammar(backend, req);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().http_status, 400);
  EXPECT_EQ(g.error().param, "response_format");
  EXPECT_NE(g.error().message.find("'uniqueItems'"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("/properties/tags/uniqueItems"), std::string::npos) << g.error().message;
}

TEST(ResponseFormatGrammar, SchemaAndJsonObjectCompile) {
  FakeBackend backend;
  const CompletionRequest schema = Parsed(json::parse(R"({"type":"json_schema","json_schema":{"name":"x",
      "schema":{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]}}})"));
  ApiResult<std::shared_ptr<const grammar::Grammar>> g = BuildOutputGrammar(backend, schema);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_NE(g.value(), nullptr);
  EXPECT_TRUE(grammar::Matches(*g.value(), R"({"a":true})"));
  EXPECT_FALSE(grammar::Matches(*g.value(), R"({"a":1})"));
  ApiResult<std::shared_ptr<const grammar::Grammar>> o = BuildOutputGrammar(backend, Parsed({{"type", "json_object"}}));
  ASSERT_TRUE(o.ok()) << o.error().message;
  ASSERT_NE(o.value(), nullptr);
  EXPECT_TRUE(grammar::Matches(*o.value(), R"({"k": [1, {"z": null}]})"));
  EXPECT_FALSE(grammar::Matches(*o.value(), R"("just a string")"));
}

TEST(ResponseFormatGrammar, WithAGrammarFieldTooIsA400) {
  FakeBackend backend;
  CompletionRequest req = Parsed({{"type", "json_object"}});
  req.grammar = "root ::= \"x\"";
  ApiResult<std::shared_ptr<const grammar::Grammar>> g = BuildOutputGrammar(backend, req);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().http_status, 400);
}

}  // namespace
}  // namespace ember::server
