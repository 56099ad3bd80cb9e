// JSON Schema -> GBNF: the corpus (tests/grammar/schemas/*.json: every valid example is a sentence of
// the compiled grammar, no invalid one is), the schemas that must be refused with the keyword named
// (schemas/rejected.json), and the text's structure (prefixes, order, whitespace).
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace ember::grammar {
namespace {

using ojson = nlohmann::ordered_json;

std::string SchemaDir() { return std::string(EMBER_SOURCE_DIR) + "/tests/grammar/schemas"; }

ojson ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ojson::parse(ss.str());
}

struct CorpusCase {
  std::string name;
  ojson body;
};

std::vector<CorpusCase> Corpus() {
  std::vector<CorpusCase> out;
  for (const auto& e : std::filesystem::directory_iterator(SchemaDir())) {
    if (e.path().extension() != ".json" || e.path().filename() == "rejected.json") continue;
    out.push_back({e.path().stem().string(), ReadJson(e.path().string())});
  }
  std::sort(out.begin(), out.end(), [](const CorpusCase& a, const CorpusCase& b) { return a.name < b.name; });
  return out;
}

// Rule names a grammar text defines.
std::vector<std::string> Defined(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t sep = line.find(" ::= ");
    if (sep != std::string::npos) names.push_back(line.substr(0, sep));
  }
  return names;
}

TEST(JsonSchemaCorpus, HasAtLeastThirtyVariedSchemas) {
  const std::vector<CorpusCase> corpus = Corpus();
  EXPECT_GE(corpus.size(), 30u);
  for (const CorpusCase& c : corpus) {
    EXPECT_TRUE(c.body.contains("schema")) << c.name;
    EXPECT_FALSE(c.body.value("valid", ojson::array()).empty()) << c.name;
    EXPECT_FALSE(c.body.value("invalid", ojson::array()).empty()) << c.name;
  }
}

TEST(JsonSchemaCorpus, EverySchemaCompilesAndParses) {
  for (const CorpusCase& c : Corpus()) {
    StatusOr<std::string> text = JsonSchemaTextToGbnf(c.body["schema"].dump());
    ASSERT_TRUE(text.ok()) << c.name << ": " << text.status().message();
    StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status().message() << "\n" << *text;
  }
}

// Valid examples (compact JSON, or the raw texts of valid_text) are sentences; invalid ones, and schema-valid
// ones outside what the compiler emits (not_emitted: other property orders, extra whitespace), are not.
TEST(JsonSchemaCorpus, ValidExamplesMatchAndInvalidOnesDoNot) {
  for (const CorpusCase& c : Corpus()) {
    StatusOr<std::string> text = JsonSchemaTextToGbnf(c.body["schema"].dump());
    ASSERT_TRUE(text.ok()) << c.name << ": " << text.status().message();
    StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status().message();
    auto texts = [&](const char* key, const char* raw_key) {
      std::vector<std::string> out;
      for (const ojson& v : c.body.value(key, ojson::array())) out.push_back(v.dump());
      for (const ojson& v : c.body.value(raw_key, ojson::array())) out.push_back(v.get<std::string>());
      return out;
    };
    for (const std::string& v : texts("valid", "valid_text")) {
      EXPECT_TRUE(Matches(**g, v)) << c.name << ": valid example refused: " << v << "\n" << *text;
      EXPECT_TRUE(IsPrefix(**g, v.substr(0, v.size() / 2))) << c.name << ": " << v;
    }
    for (const std::string& v : texts("invalid", "invalid_text")) {
      EXPECT_FALSE(Matches(**g, v)) << c.name << ": invalid example accepted: " << v << "\n" << *text;
    }
    for (const std::string& v : texts("not_emitted", "not_emitted_text")) {
      EXPECT_FALSE(Matches(**g, v)) << c.name << ": " << v;
    }
  }
}

TEST(JsonSchemaRejected, EachNamesItsKeywordAndWhere) {
  const ojson rejected = ReadJson(SchemaDir() + "/rejected.json");
  ASSERT_GE(rejected.size(), 20u);
  for (const ojson& r : rejected) {
    StatusOr<std::string> text = JsonSchemaTextToGbnf(r["schema"].dump());
    ASSERT_FALSE(text.ok()) << r["schema"].dump() << "\ncompiled to:\n" << *text;
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = text.status().message();
    EXPECT_NE(m.find("unsupported JSON Schema keyword '" + r["keyword"].get<std::string>() + "'"), std::string::npos)
        << m;
    EXPECT_NE(m.find(" at " + r["at"].get<std::string>()), std::string::npos) << m;
  }
}

TEST(JsonSchemaRejected, BadShapesAreErrorsNotCrashes) {
  for (const char* s : {R"({"type":"strin"})", R"({"type":[]})", R"({"properties":[1]})", R"({"required":"a"})",
                        R"({"enum":[]})", R"({"minItems":-1})", R"({"maxLength":1.5})", R"({"$ref":"#/nope"})",
                        R"({"$ref":5})", R"(false)", R"(3)", R"({"type":"integer","minimum":5,"maximum":4})",
                        R"({"type":"object","required":["x"],"additionalProperties":false})",
                        R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})",
                        R"({"allOf":[{"type":"string"},{"type":"integer"}]})", R"({"type":"string","pattern":"[z-a]"})",
                        R"({"type":"string","minLength":5000})", R"({"type":"number","minimum":1e300})"}) {
    StatusOr<std::string> text = JsonSchemaTextToGbnf(s);
    EXPECT_FALSE(text.ok()) << s;
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument) << s;
  }
  EXPECT_FALSE(JsonSchemaTextToGbnf("{not json").ok());
}

TEST(JsonSchemaText, RootComesFirstAndEveryRuleCarriesThePrefix) {
  JsonSchemaOptions o;
  o.prefix = "tool3-";
  StatusOr<std::string> text = JsonSchemaTextToGbnf(
      R"({"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","maximum":9}},"required":["q"]})", o);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->rfind("tool3-root ::= ", 0), 0u) << *text;
  for (const std::string& n : Defined(*text)) EXPECT_EQ(n.rfind("tool3-", 0), 0u) << n;
  o.prefix = "bad_prefix";
  EXPECT_FALSE(JsonSchemaTextToGbnf("{}", o).ok());
}

TEST(JsonSchemaMatch, TwoPrefixedGrammarsConcatenateWithoutClashes) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})";
  JsonSchemaOptions oa, ob;
  oa.prefix = "a-";
  ob.prefix = "b-";
  StatusOr<std::string> a = JsonSchemaTextToGbnf(schema, oa);
  StatusOr<std::string> b = JsonSchemaTextToGbnf(schema, ob);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string both = "root ::= a-root | b-root\n" + *a + *b;
  std::set<std::string> seen;
  for (const std::string& n : Defined(both)) EXPECT_TRUE(seen.insert(n).second) << "defined twice: " << n;
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(both);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Matches(**g, R"({"a":"x"})"));
}

TEST(JsonSchemaMatch, PropertiesKeepDeclaredOrderFromText) {
  StatusOr<std::string> text = JsonSchemaTextToGbnf(
      R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}},"required":["zeta","alpha"]})");
  ASSERT_TRUE(text.ok());
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Matches(**g, R"({"zeta":"z","alpha":"a"})")) << *text;
  EXPECT_FALSE(Matches(**g, R"({"alpha":"a","zeta":"z"})")) << *text;
}

TEST(JsonSchemaText, WhitespaceIsBoundedByTheOption) {
  JsonSchemaOptions tight;
  tight.max_whitespace = 0;
  StatusOr<std::string> none = JsonSchemaTextToGbnf(R"({"type":"array","items":{"type":"integer"}})", tight);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->find("ws"), std::string::npos) << *none;
  StatusOr<std::string> two = JsonSchemaTextToGbnf(R"({"type":"array","items":{"type":"integer"}})");
  ASSERT_TRUE(two.ok());
  EXPECT_NE(two->find("ws ::= [\\x20\\x09\\x0A]{0,2}"), std::string::npos) << *two;
}

TEST(JsonSchemaText, DigitsAreBounded) {
  StatusOr<std::string> text = JsonSchemaTextToGbnf(R"({"type":"array","items":{"type":"number"}})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("[0-9]*"), std::string::npos) << *text;
  EXPECT_EQ(text->find("[0-9]+"), std::string::npos) << *text;
}

TEST(JsonSchemaText, AnyJsonObjectIsAnObjectGrammar) {
  const std::string text = AnyJsonObjectGbnf();
  EXPECT_EQ(text.rfind("root ::= ", 0), 0u) << text;
  JsonSchemaOptions o;
  o.prefix = "x-";
  const std::string p = AnyJsonObjectGbnf(o);
  for (const std::string& n : Defined(p)) EXPECT_EQ(n.rfind("x-", 0), 0u) << n;
}

TEST(JsonSchemaMatch, AnyJsonObjectAcceptsObjectsOnly) {
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(AnyJsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Matches(**g, "{}"));
  EXPECT_TRUE(Matches(**g, R"({"a": [1, -2.5e3, "x\n", {"b": null}], "c": true})"));
  EXPECT_FALSE(Matches(**g, "[]"));
  EXPECT_FALSE(Matches(**g, R"({"a":})"));
  EXPECT_FALSE(Matches(**g, R"({"a":1,})"));
  // Nesting is bounded: a reply cannot nest for ever.
  EXPECT_FALSE(Matches(**g, R"({"a":[[[[[[[[[[1]]]]]]]]]]})"));
}

}  // namespace
}  // namespace ember::grammar
