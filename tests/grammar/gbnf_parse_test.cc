// ParseGbnf: what it accepts, and the line:column and reason of what it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"

namespace ember::grammar {
namespace {

using ::testing::HasSubstr;

Status ParseError(std::string_view text, const GbnfLimits& limits = {}) {
  auto g = ParseGbnf(text, "root", limits);
  return g.ok() ? Status::Ok() : g.status();
}

TEST(GbnfParse, AcceptsTheSyntax) {
  const char* kGrammar = R"(# a comment
root ::= greeting ws name-2 ("!" | "?")? tail*   # trailing comment
greeting ::= "hi" | "hello"
ws ::= [ \t\n]+
name-2 ::= [A-Z] [a-z]{1,8}
tail ::= "." | [^a-z\x00] | "\u00e9" | "\U0001F600" | .
)";
  auto g = ParseGbnf(kGrammar);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
}

TEST(GbnfParse, AlternativesMayContinueOnTheNextLine) {
  auto g = ParseGbnf("root ::= \"a\"\n  | \"b\"\nother ::= \"c\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(**g, "b"));
  EXPECT_FALSE(Matches(**g, "c"));
}

TEST(GbnfParse, RefusesEmptyGrammar) {
  for (const char* text : {"", "   \n", "# only a comment\n"}) {
    Status s = ParseError(text);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr("empty grammar"));
  }
}

TEST(GbnfParse, UndefinedRuleNamesItsPosition) {
  Status s = ParseError("root ::= \"a\"\n  item\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("2:3"));
  EXPECT_THAT(s.message(), HasSubstr("undefined rule 'item'"));
}

TEST(GbnfParse, MissingRoot) {
  Status s = ParseError("start ::= \"a\"");
  EXPECT_THAT(s.message(), HasSubstr("no rule named 'root'"));
  EXPECT_TRUE(ParseGbnf("start ::= \"a\"", "start").ok());
}

TEST(GbnfParse, LeftRecursionIsRefused) {
  Status s = ParseError("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("left recursion"));
  EXPECT_THAT(s.message(), HasSubstr("2:10"));
  // Through a nullable prefix and another rule.
  s = ParseError("root ::= a\na ::= \"x\"? b \"y\"\nb ::= a | \"z\"");
  EXPECT_THAT(s.message(), HasSubstr("left recursion"));
}

TEST(GbnfParse, NullableRepetitionIsNotLeftRecursion) {
  auto g = ParseGbnf("root ::= (\"a\"?)* \"b\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(**g, "aaab"));
  EXPECT_TRUE(Matches(**g, "b"));
}

TEST(GbnfParse, UnproductiveRuleIsRefused) {
  Status s = ParseError("root ::= loop\nloop ::= \"x\" loop");
  EXPECT_THAT(s.message(), HasSubstr("rule 'loop' can never finish"));
  s = ParseError("root ::= [^\\x00-\\U0010FFFF]");
  EXPECT_THAT(s.message(), HasSubstr("can never finish"));
}

TEST(GbnfParse, SyntaxErrorsWithPositions) {
  struct Case {
    const char* text;
    const char* where;
    const char* what;
  } cases[] = {
      {"root ::= \"abc", "1:10", "unterminated literal"},
      {"root ::= [a-z", "1:10", "unterminated character class"},
      {"root ::= (\"a\"", "1:10", "unclosed '('"},
      {"root ::= \"a\")", "1:13", "')' without"},
      {"root ::= *", "1:10", "nothing before it"},
      {"root ::= \"\\q\"", "1:11", "unknown escape \\q"},
      {"root ::= \"\\x4\"", "1:14", "needs 2 hex digits"},
      {"root ::= [z-a]", "1:11", "reversed"},
      {"root ::= \"a\"{3,1}", "1:13", "n below m"},
      {"root ::= \"a\"{2", "1:13", "unclosed '{'"},
      {"root ::= \"\\uD800\"", "1:11", "surrogate"},
      {"root ::= \"\\U00110000\"", "1:11", "above U+10FFFF"},
      {"root ::= \"a\" @", "1:14", "unexpected '@'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "2:1", "defined twice"},
      {"= \"a\"", "1:1", "expected a rule"},
      {"root ::= \"\xff\"", "1:11", "invalid UTF-8"},
  };
  for (const Case& c : cases) {
    Status s = ParseError(c.text);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(s.message(), HasSubstr(c.where)) << c.text << " -> " << s.message();
    EXPECT_THAT(s.message(), HasSubstr(c.what)) << c.text << " -> " << s.message();
  }
}

TEST(GbnfParse, LimitsAreChecked) {
  GbnfLimits small;
  small.max_bytes = 16;
  EXPECT_THAT(ParseError("root ::= \"0123456789\"", small).message(), HasSubstr("max_bytes"));

  GbnfLimits rules;
  rules.max_rules = 3;
  EXPECT_THAT(ParseError("root ::= a b c\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"", rules).message(),
              HasSubstr("max_rules"));
  // Repetitions count as rules after expansion.
  EXPECT_THAT(ParseError("root ::= \"a\"{0,5}", rules).message(), HasSubstr("max_rules"));

  GbnfLimits nest;
  nest.max_nesting = 2;
  EXPECT_TRUE(ParseGbnf("root ::= ((\"a\"))", "root", nest).ok());
  EXPECT_THAT(ParseError("root ::= (((\"a\")))", nest).message(), HasSubstr("max_nesting"));

  EXPECT_THAT(ParseError("root ::= \"a\"{1025}").message(), HasSubstr("max_repeat"));
  EXPECT_THAT(ParseError("root ::= \"a\"{99999999999999}").message(), HasSubstr("max_repeat"));
  EXPECT_TRUE(ParseGbnf("root ::= \"a\"{1024}").ok());

  GbnfLimits elems;
  elems.max_elements = 100;
  EXPECT_THAT(ParseError("root ::= \"a\"{60} \"b\"{60}", elems).message(), HasSubstr("max_elements"));
}

TEST(GbnfParse, NestedRepetitionStaysBounded) {
  // 1024 x 1024 copies would be a million elements: the inner group is one rule, referenced.
  auto g = ParseGbnf("root ::= ((\"a\"{1024}){1024}){2}");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(IsPrefix(**g, std::string(5000, 'a')));
}

}  // namespace
}  // namespace ember::grammar
