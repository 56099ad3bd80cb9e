// The JSON Schema compiler's budget (grammar/compile_budget.h), issue 29: bytes, rules and time are
// checked while compiling, so a hostile schema is refused part-way with the limit named; a cancellation
// probe stops it; and the work is linear in the schema (20,000 properties once took 104 s of CPU in
// quadratic rule naming, and their parse into ordered_json was quadratic too).
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/compile_budget.h"
#include "grammar/json_schema.h"
#include "grammar/ordered_json_parse.h"

namespace ember::grammar {
namespace {

// {"type":"object","properties":{"p0":{...},...}}; `first` replaces p0's schema (visited last: the
// compiler builds an object's rules from its last property back).
std::string ManyProperties(int n, const std::string& each = R"({"type":"string"})", const std::string& first = "") {
  std::string s = R"({"type":"object","properties":{)";
  for (int i = 0; i < n; ++i) {
    s += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":" + (i == 0 && !first.empty() ? first : each);
  }
  return s + "}}";
}

double CpuSeconds(std::clock_t since) { return static_cast<double>(std::clock() - since) / CLOCKS_PER_SEC; }

TEST(JsonSchemaBudget, RuleLimitStopsTheCompilePartWay) {
  // Had it finished, p0's unsupported keyword would be the error; the rule limit is hit first.
  const std::string schema = ManyProperties(2000, R"({"type":"string"})", R"({"not":{}})");
  CompileLimits limits;
  limits.max_rules = 100;
  CompileBudget budget(limits);
  JsonSchemaOptions o;
  o.budget = &budget;
  auto r = JsonSchemaTextToGbnf(schema, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "schema too large: its grammar needs more than 100 rules (the limit)");
  EXPECT_FALSE(budget.was_cancelled());
  // Without the budget the same schema is refused for the keyword: the whole schema was reached.
  auto full = JsonSchemaTextToGbnf(ManyProperties(50, R"({"type":"string"})", R"({"not":{}})"));
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("'not'"), std::string::npos);
}

TEST(JsonSchemaBudget, ByteLimitIsNamed) {
  CompileLimits limits;
  limits.max_bytes = 4096;
  CompileBudget budget(limits);
  JsonSchemaOptions o;
  o.budget = &budget;
  const std::string big_enum = R"({"enum":[")" + std::string(3000, 'x') + R"(","y"]})";
  auto r = JsonSchemaTextToGbnf(ManyProperties(10, R"({"type":"object","properties":{"e":)" + big_enum + "}}"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "schema too large: its grammar exceeds 4096 bytes (the limit)");
}

TEST(JsonSchemaBudget, TimeLimitIsCheckedWhileCompiling) {
  CompileLimits limits;
  limits.max_time = std::chrono::milliseconds(0);
  CompileBudget budget(limits);
  JsonSchemaOptions o;
  o.budget = &budget;
  auto r = JsonSchemaTextToGbnf(ManyProperties(500), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "schema too complex: compiling it takes more than 0 ms (the limit)");
}

TEST(JsonSchemaBudget, CancellationStopsTheCompile) {
  int polls = 0;
  CompileLimits unlimited;  // only the cancellation may stop it
  unlimited.max_rules = unlimited.max_bytes = size_t{1} << 30;
  unlimited.max_time = std::chrono::milliseconds(60000);
  CompileBudget budget(unlimited, [&polls] { return ++polls >= 2; });  // the client "leaves" at the 2nd poll
  JsonSchemaOptions o;
  o.budget = &budget;
  const auto t0 = std::chrono::steady_clock::now();
  // Big enough to run for more than a poll interval without the cancel (an anyOf per property).
  auto r = JsonSchemaTextToGbnf(
      ManyProperties(2000, R"({"anyOf":[{"type":"string","maxLength":40},{"type":"integer","minimum":3}]})"), o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(budget.was_cancelled());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(polls, 2);
  EXPECT_LT(s, 1.0);
}

TEST(JsonSchemaBudget, AProbeThatSaysNoLeavesTheResultAlone) {
  int polls = 0;
  CompileBudget budget({}, [&polls] { return ++polls < 0; });
  JsonSchemaOptions o;
  o.budget = &budget;
  auto with = JsonSchemaTextToGbnf(ManyProperties(40), o);
  auto without = JsonSchemaTextToGbnf(ManyProperties(40));
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(*with, *without);
  EXPECT_GE(polls, 1);
}

TEST(JsonSchemaBudget, TwentyThousandPropertiesAreRefusedQuickly) {
  const std::string schema = ManyProperties(20000);
  ASSERT_GT(schema.size(), 500u << 10);
  const std::clock_t c0 = std::clock();
  auto r = JsonSchemaTextToGbnf(schema);
  const double cpu = CpuSeconds(c0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(the limit)"), std::string::npos) << r.status().message();
  EXPECT_LT(cpu, 0.5);
}

TEST(JsonSchemaBudget, EightThousandPropertiesOfEveryShapeAreDecidedQuickly) {
  const std::string nested = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"string"}}}})";
  const std::string any_of = R"({"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"integer"}}}]})";
  std::string required = ManyProperties(8000);
  required.insert(required.size() - 1, R"(,"required":[)" + [] {
    std::string names;
    for (int i = 0; i < 8000; ++i) names += (i ? ",\"p" : "\"p") + std::to_string(i) + "\"";
    return names + "]";
  }());
  std::string branches = R"({"anyOf":[)";
  for (int i = 0; i < 8000; ++i) branches += (i ? "," : "") + std::string(R"({"type":"object","properties":{"q)") + std::to_string(i) + R"(":{"type":"integer"}}})";
  branches += "]}";
  for (const std::string& schema : {ManyProperties(8000), ManyProperties(8000, nested), ManyProperties(8000, any_of),
                                    required, branches}) {
    const std::clock_t c0 = std::clock();
    auto r = JsonSchemaTextToGbnf(schema);
    const double cpu = CpuSeconds(c0);
    EXPECT_LT(cpu, 0.5) << schema.substr(0, 120) << ": " << r.status().message();
  }
}

TEST(JsonSchemaBudget, ToolSchemasShareOneBudget) {
  CompileLimits limits;
  limits.max_rules = 300;
  CompileBudget budget(limits);
  JsonSchemaOptions o;
  o.budget = &budget;
  int compiled = 0;
  Status last;
  for (int i = 0; i < 100 && last.ok(); ++i) {
    o.prefix = "tool" + std::to_string(i) + "-";
    auto r = JsonSchemaTextToGbnf(ManyProperties(10), o);
    if (r.ok()) ++compiled;
    else last = r.status();
  }
  EXPECT_FALSE(last.ok());
  EXPECT_GT(compiled, 0);
  EXPECT_LT(compiled, 100);
}

TEST(OrderedJsonParse, KeepsOrderAndMatchesNlohmannOnRepeatedKeys) {
  for (int n : {3, 40}) {  // scanned and hashed objects
    std::string text = "{";
    for (int i = n; i-- > 0;) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    text += R"("k1":"again","nested":[{"b":1,"a":2,"b":3}],"k0":null})";
    auto mine = ParseOrderedJson(text);
    ASSERT_TRUE(mine.has_value());
    EXPECT_EQ(mine->dump(), nlohmann::ordered_json::parse(text).dump());
  }
  EXPECT_FALSE(ParseOrderedJson("{\"a\":").has_value());
  EXPECT_FALSE(ParseOrderedJson("[1,]").has_value());
  EXPECT_EQ(ParseOrderedJson("\"x\"")->dump(), "\"x\"");
}

}  // namespace
}  // namespace ember::grammar
