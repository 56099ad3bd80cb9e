// Schema compilation on the request path (issue 29): every route that compiles a schema or a tool
// grammar does it through BuildOutputGrammar, within one CompileBudget, so a hostile schema is a 400
// naming the limit (response_format, Responses text.format and the llama json_schema field fill the
// same req.json_schema; Anthropic tool_choice any / tool and OpenAI required / named share the tool
// path), decided in well under a second, and a client that leaves stops the compile (a 499 no one reads).
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "server/completion_request.h"
#include "server/fake_backend.h"
#include "server/output_constraint.h"

namespace ember::server {
namespace {

std::string ManyProperties(int n) {
  std::string s = R"({"type":"object","properties":{)";
  // Appended piece by piece: GCC 12's -Wrestrict misfires on `"literal" + std::to_string(i)`.
  for (int i = 0; i < n; ++i) {
    s += i ? ",\"p" : "\"p";
    s += std::to_string(i);
    s += R"(":{"type":"string"})";
  }
  return s + "}}";
}

CompletionRequest WithSchema(const std::string& schema) {
  CompletionRequest req;
  req.kind = ApiKind::kChat;
  req.response_format = ResponseFormat::kJsonSchema;
  req.json_schema = schema;
  return req;
}

CompletionRequest WithTools(int tools, int properties, ApiKind kind = ApiKind::kMessages) {
  CompletionRequest req;
  req.kind = kind;
  for (int i = 0; i < tools; ++i) {
    std::string name = "t";
    name += std::to_string(i);
    req.tools.push_back({name, "", ManyProperties(properties)});
  }
  req.tool_choice = ToolChoice::kRequired;
  return req;
}

double CpuSeconds(std::clock_t since) { return static_cast<double>(std::clock() - since) / CLOCKS_PER_SEC; }

TEST(SchemaBudget, TwentyThousandPropertiesAreA400NamingTheLimit) {
  FakeBackend backend;
  const std::clock_t c0 = std::clock();
  auto g = BuildOutputGrammar(backend, WithSchema(ManyProperties(20000)));
  const double cpu = CpuSeconds(c0);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().http_status, 400);
  EXPECT_EQ(g.error().param, "response_format");
  EXPECT_NE(g.error().message.find("schema too large"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("(the limit)"), std::string::npos) << g.error().message;
  EXPECT_LT(cpu, 0.5);
}

TEST(SchemaBudget, ManyToolsShareOneBudget) {
  FakeBackend backend;  // each tool's schema is fine alone; together they are too many rules
  const std::clock_t c0 = std::clock();
  auto g = BuildOutputGrammar(backend, WithTools(400, 30));
  const double cpu = CpuSeconds(c0);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().http_status, 400);
  EXPECT_NE(g.error().message.find("(the limit)"), std::string::npos) << g.error().message;
  EXPECT_LT(cpu, 0.5);
  auto one = BuildOutputGrammar(backend, WithTools(1, 30, ApiKind::kChat));
  EXPECT_TRUE(one.ok()) << one.error().message;
}

TEST(SchemaBudget, AClientThatLeftStopsTheCompile) {
  FakeBackend backend;
  int probes = 0;
  auto gone = [&probes] { return ++probes > 0; };
  for (const CompletionRequest& req : {WithSchema(ManyProperties(3000)), WithTools(50, 30)}) {
    probes = 0;
    auto g = BuildOutputGrammar(backend, req, gone);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().http_status, 499) << g.error().message;
    EXPECT_EQ(probes, 1);  // stopped at the first poll
  }
  // A client still there is never told it left.
  auto fine = BuildOutputGrammar(backend, WithSchema(ManyProperties(200)), [] { return false; });
  EXPECT_TRUE(fine.ok()) << fine.error().message;
}

}  // namespace
}  // namespace ember::server
