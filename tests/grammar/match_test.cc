// Byte-level Matches / IsPrefix over UTF-8.
#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace ember::grammar {
namespace {

std::shared_ptr<const Grammar> Parse(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

TEST(GbnfMatch, LiteralsAndAlternatives) {
  auto g = Parse("root ::= \"yes\" | \"no\"");
  EXPECT_TRUE(Matches(*g, "yes"));
  EXPECT_TRUE(Matches(*g, "no"));
  EXPECT_FALSE(Matches(*g, "ye"));
  EXPECT_TRUE(IsPrefix(*g, "ye"));
  EXPECT_TRUE(IsPrefix(*g, ""));
  EXPECT_FALSE(IsPrefix(*g, "yes!"));
  EXPECT_FALSE(IsPrefix(*g, "x"));
}

TEST(GbnfMatch, Repetitions) {
  auto g = Parse("root ::= [0-9]{2,4} \"-\"? [a-c]* \"x\"+");
  EXPECT_TRUE(Matches(*g, "12x"));
  EXPECT_TRUE(Matches(*g, "1234-abcabcxx"));
  EXPECT_FALSE(Matches(*g, "1x"));
  EXPECT_FALSE(Matches(*g, "12345x"));
  EXPECT_FALSE(Matches(*g, "12"));
  EXPECT_TRUE(IsPrefix(*g, "12"));
  auto exact = Parse("root ::= (\"ab\"){3}");
  EXPECT_TRUE(Matches(*exact, "ababab"));
  EXPECT_FALSE(Matches(*exact, "abab"));
  EXPECT_FALSE(IsPrefix(*exact, "abababa"));
  auto at_least = Parse("root ::= \"a\"{2,}");
  EXPECT_FALSE(Matches(*at_least, "a"));
  EXPECT_TRUE(Matches(*at_least, std::string(300, 'a')));
  auto none = Parse("root ::= \"a\"{0} \"b\"");
  EXPECT_TRUE(Matches(*none, "b"));
}

TEST(GbnfMatch, Escapes) {
  auto g = Parse(R"(root ::= "\n\r\t\\\"\x41\u00e9\U0001F600")");
  EXPECT_TRUE(Matches(*g, "\n\r\t\\\"A\xC3\xA9\xF0\x9F\x98\x80"));
}

TEST(GbnfMatch, ClassesOverCodePoints) {
  auto g = Parse("root ::= [a-zé-ü]+");
  EXPECT_TRUE(Matches(*g, "abc\xC3\xA9"));  // é
  EXPECT_TRUE(Matches(*g, "\xC3\xBC"));     // ü
  EXPECT_FALSE(Matches(*g, "\xC3\xBD"));    // ý
  // The lead byte of a character the class holds is a prefix; of one it cannot hold, not.
  EXPECT_TRUE(IsPrefix(*g, "a\xC3"));
  EXPECT_FALSE(IsPrefix(*g, "a\xE2"));
  auto neg = Parse("root ::= [^\"\\\\]*");
  EXPECT_TRUE(Matches(*neg, "plain text \xE2\x82\xAC"));
  EXPECT_FALSE(IsPrefix(*neg, "a\"b"));
  auto any = Parse("root ::= . . .");
  EXPECT_TRUE(Matches(*any, "a\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_FALSE(Matches(*any, "ab"));
}

TEST(GbnfMatch, InvalidUtf8NeverMatches) {
  auto any = Parse("root ::= .*");
  EXPECT_TRUE(IsPrefix(*any, "\xE2\x82"));     // an unfinished character
  EXPECT_FALSE(Matches(*any, "\xE2\x82"));     // is not a sentence yet
  EXPECT_FALSE(IsPrefix(*any, "\xC0\x80"));    // overlong
  EXPECT_FALSE(IsPrefix(*any, "\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(IsPrefix(*any, "\xF4\x90"));    // above U+10FFFF
  EXPECT_FALSE(IsPrefix(*any, "\x80"));        // stray continuation
  EXPECT_FALSE(IsPrefix(*any, "\xE2\x41"));    // broken sequence
}

TEST(GbnfMatch, RecursionAndNesting) {
  auto g = Parse(R"(
root ::= value
value ::= "[" ws (value ("," ws value)*)? "]" ws | [0-9]+ ws
ws ::= " "?
)");
  EXPECT_TRUE(Matches(*g, "[1, [2, [3]], []]"));
  EXPECT_FALSE(Matches(*g, "[1, [2]"));
  EXPECT_TRUE(IsPrefix(*g, "[1, [2"));
  EXPECT_FALSE(IsPrefix(*g, "[1,]"));
  std::string deep(500, '[');
  deep += std::string(500, ']');
  EXPECT_TRUE(Matches(*g, deep));
}

TEST(GbnfMatch, JsonGrammar) {
  auto g = Parse(AnyJsonObjectGbnf());  // the json_object grammar of response_format
  EXPECT_TRUE(Matches(*g, R"({"a": [1, 2.5, "x\n\u00e9"], "b": {"c": null}, "d": true})"));
  EXPECT_FALSE(Matches(*g, R"({"a": })"));
  EXPECT_TRUE(IsPrefix(*g, R"({"a": [1, 2.5, "x)"));
  EXPECT_FALSE(IsPrefix(*g, R"({"a" 1)"));
}

TEST(GbnfMatch, EmptySentence) {
  auto g = Parse("root ::= \"\" | \"a\"");
  EXPECT_TRUE(Matches(*g, ""));
  EXPECT_TRUE(Matches(*g, "a"));
}

}  // namespace
}  // namespace ember::grammar

namespace ember::grammar {
namespace {

TEST(GbnfMatch, DeadEndAlternativeIsNotAPrefix) {
  // `[]` holds no character: the first alternative can never finish, so "a" leads nowhere.
  auto g = ParseGbnf("root ::= \"a\" [] | \"c\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FALSE(IsPrefix(**g, "a"));
  EXPECT_TRUE(Matches(**g, "c"));
}

}  // namespace
}  // namespace ember::grammar
