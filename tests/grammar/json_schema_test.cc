// JSON Schema -> GBNF: the corpus (tests/grammar/schemas/*.json: every valid example is a sentence of
// the compiled grammar, no invalid one is), the schemas that must be refused with the keyword named
// (schemas/rejected.json), and the text's structure (prefixes, order, whitespace).
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstdio>
#include <random>
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

// Random sentences of every corpus grammar, grown one character at a time through IsPrefix (closing
// characters weighted up so walks end): each finished one must be JSON. Catches a grammar that admits
// non-JSON (an unescaped quote, a trailing comma) wherever the examples did not look.
TEST(JsonSchemaCorpus, RandomSentencesAreJson) {
  // Each step tries the structural characters and 12 others drawn from printable ASCII (and a few more).
  const std::vector<std::string> closers = {"\"", "}", "]", ",", ":", "1"};
  std::vector<std::string> others = {"\n", "\t", "\xc3\xa9", "\xe6\x97\xa5"};
  for (char ch = 0x20; ch < 0x7F; ++ch) others.push_back(std::string(1, ch));
  std::mt19937 rng(17);
  int finished = 0, walks = 0;
  for (const CorpusCase& c : Corpus()) {
    StatusOr<std::string> text = JsonSchemaTextToGbnf(c.body["schema"].dump());
    ASSERT_TRUE(text.ok()) << c.name;
    StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
    ASSERT_TRUE(g.ok()) << c.name;
    for (int w = 0; w < 2; ++w, ++walks) {
      std::string s;
      for (int step = 0; step < 250; ++step) {
        if (Matches(**g, s) && rng() % 3 == 0) break;
        std::vector<std::string> next;
        for (const std::string& a : closers) {
          if (IsPrefix(**g, s + a)) next.insert(next.end(), 4, a);
        }
        for (int k = 0; k < 12; ++k) {
          const std::string& a = others[rng() % others.size()];
          if (IsPrefix(**g, s + a)) next.push_back(a);
        }
        if (next.empty()) continue;  // none of this step's draws continues it: draw again
        s += next[rng() % next.size()];
      }
      if (!Matches(**g, s)) continue;
      ++finished;
      EXPECT_TRUE(nlohmann::json::accept(s)) << c.name << ": the grammar emits non-JSON: " << s;
    }
  }
  EXPECT_GT(finished, walks / 2) << finished << " of " << walks << " walks finished";
  std::printf("random walks: %d of %d finished, all JSON\n", finished, walks);
}

// Corpus schemas with random parts replaced (values of other types, other sub-schemas, extremes): the
// compiler never crashes (nlohmann's value() threw on an allOf branch that was an array), refuses with
// InvalidArgument, and whatever it emits parses.
TEST(JsonSchemaRejected, MutatedSchemasCompileToParsableGrammarsOrAreRefused) {
  const std::vector<CorpusCase> corpus = Corpus();
  const std::vector<ojson> replacements = {
      nullptr, 0, -1, 1e20, -1e300, 2.5, "x", "", ojson::array(), ojson::object(), true, false,
      {{"type", "strin"}}, {{"type", ojson::array({"string", "null"})}}, {{"$ref", "#"}}, {{"$ref", "#/nope"}},
      {{"enum", ojson::array()}}, {{"minLength", 2000}}, {{"maxItems", 0}}, {{"pattern", "(("}},
      {{"anyOf", ojson::array({ojson::object(), {{"$ref", "#"}}})}}, {{"allOf", ojson::array({{{"type", "integer"}}})}}};
  std::mt19937 rng(5);
  int compiled = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    ojson schema = corpus[rng() % corpus.size()].body["schema"];
    for (int k = 0; k < 2; ++k) {  // the node list is rebuilt after each change (children die with it)
      std::vector<ojson*> nodes;
      std::vector<ojson*> todo = {&schema};
      while (!todo.empty()) {
        ojson* n = todo.back();
        todo.pop_back();
        nodes.push_back(n);
        if (n->is_structured()) {
          for (auto it = n->begin(); it != n->end(); ++it) todo.push_back(&*it);
        }
      }
      ojson replacement = rng() % 4 == 0 ? *nodes[rng() % nodes.size()] : replacements[rng() % replacements.size()];
      *nodes[rng() % nodes.size()] = std::move(replacement);
    }
    StatusOr<std::string> text = JsonSchemaTextToGbnf(schema.dump());
    if (!text.ok()) {
      EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument) << schema.dump();
      ++refused;
      continue;
    }
    // A schema whose required properties recurse for ever has no finite value: the parser says so.
    StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
    EXPECT_TRUE(g.ok() || g.status().message().find("can never finish") != std::string::npos)
        << g.status().message() << "\nschema: " << schema.dump() << "\n" << *text;
    ++compiled;
  }
  EXPECT_GT(compiled, 300);
  EXPECT_GT(refused, 300);
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

// allOf of two references to the level below, 15 levels deep (within the depth limit): 2^16 folds
// without the work budget.
TEST(JsonSchemaRejected, ExponentialFoldingHitsTheBudget) {
  ojson defs = {{"a0", {{"type", "object"}, {"properties", {{"x", {{"type", "string"}}}}}}}};
  for (int i = 1; i <= 15; ++i) {
    const std::string below = std::string("#/$defs/a").append(std::to_string(i - 1));
    defs[std::string("a").append(std::to_string(i))] = {{"allOf", ojson::array({{{"$ref", below}}, {{"$ref", below}}})}};
  }
  const ojson schema = {{"$defs", defs}, {"$ref", "#/$defs/a15"}, {"required", {"x"}}};
  StatusOr<std::string> text = JsonSchemaTextToGbnf(schema.dump());
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("too large"), std::string::npos) << text.status().message();
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

// minLength / maxLength exactly, on both sides of the small-count / doubling-block switch (16).
TEST(JsonSchemaMatch, StringLengthsAreExact) {
  for (int lo : {0, 1, 2, 3, 5, 16, 17, 31, 33}) {
    for (int hi = lo; hi <= lo + 40; ++hi) {
      const std::string schema = R"({"type":"string","minLength":)" + std::to_string(lo) + R"(,"maxLength":)" +
                                 std::to_string(hi) + "}";
      StatusOr<std::string> text = JsonSchemaTextToGbnf(schema);
      ASSERT_TRUE(text.ok()) << schema;
      StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
      ASSERT_TRUE(g.ok()) << g.status().message() << "\n" << *text;
      for (int n = 0; n <= hi + 3; ++n) {
        const std::string quoted = std::string("\"").append(static_cast<size_t>(n), 'a').append("\"");
        EXPECT_EQ(Matches(**g, quoted), n >= lo && n <= hi) << schema << " length " << n;
      }
    }
  }
}

// Several long bounded strings and arrays in one schema: the grammar stays within the parser's rule limit
// (GBNF's own {0,1000} would cost about a thousand rules each).
TEST(JsonSchemaMatch, LargeBoundsStayWithinTheRuleLimit) {
  ojson props = ojson::object();
  for (int i = 0; i < 8; ++i) {
    props["s" + std::to_string(i)] = {{"type", "string"}, {"maxLength", 1000 + i}};
    props["a" + std::to_string(i)] = {{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 1}, {"maxItems", 500 + i}};
  }
  const ojson schema = {{"type", "object"}, {"properties", props}, {"required", {"s0", "a0"}}, {"additionalProperties", false}};
  StatusOr<std::string> text = JsonSchemaTextToGbnf(schema.dump());
  ASSERT_TRUE(text.ok()) << text.status().message();
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(*text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto ints = [](int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ",7" : "7");
    return s + "]";
  };
  EXPECT_TRUE(Matches(**g, R"({"s0":")" + std::string(1000, 'x') + R"(","a0":)" + ints(500) + "}"));
  EXPECT_FALSE(Matches(**g, R"({"s0":")" + std::string(1001, 'x') + R"(","a0":[1]})"));
  EXPECT_FALSE(Matches(**g, R"({"s0":"","a0":)" + ints(501) + "}"));
  EXPECT_FALSE(Matches(**g, R"({"s0":"","a0":[]})"));
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
