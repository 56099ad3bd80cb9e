// `pattern` subset: the compiled content grammar agrees with ECMAScript regex search (std::regex) on
// sample strings, and what it cannot express is refused with the feature named.
#include "grammar/json_schema_regex.h"

#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace ember::grammar::schema_regex {
namespace {

const char* kChar = "char ::= [^\\x00-\\x1F\\x22\\x5C] | \"\\\\\" ([\\x22\\x5C\\x2Fbfnrt] | \"u\" [0-9a-fA-F]{4})\n";

std::shared_ptr<const Grammar> Compile(const std::string& pattern) {
  StatusOr<std::string> content = PatternToGbnf(pattern, "char");
  EXPECT_TRUE(content.ok()) << pattern << ": " << content.status().message();
  if (!content.ok()) return nullptr;
  const std::string text = "root ::= \"\\\"\" " + *content + " \"\\\"\"\n" + kChar;
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return g.ok() ? *g : nullptr;
}

TEST(PatternToGbnf, AgreesWithEcmaScriptSearch) {
  const std::vector<std::string> patterns = {
      "^[A-Z]{3}-[0-9]{4}$", "^\\d{5}(-\\d{4})?$", "cat|dog", "^(?:https?|ftp)://[a-z0-9.-]+$", "^a+b*c?$",
      "^[^0-9]+$", "x{2,}", "^(ab|cd){1,3}$", "^\\w+@\\w+\\.com$", "^.{2,4}$", "^[\\s\\d]+$", "\\.txt$",
      "^(?<year>\\d{4})$", "^a|b$", "^$", "^[a\\-z]$", "^\"q\"$", "^a\\\\b$", "^\\x41\\u0042$", "^[^]$", "^[\\]a]$"};
  const std::vector<std::string> samples = {
      "", "a", "b", "ab", "abc", "cat", "a dog", "ABC-1234", "AB-1234", "12345", "12345-6789", "1234", "abcd",
      "aab", "aaabbc", "http://x.y", "https://a-b.c", "ftp://q", "mailto://x", "xx", "x", "abab", "ababab",
      "abababab", "cd", "joe@site.com", "joe@site.org", "1 2", "  ", "file.txt", "file.txt.bak", "2024", "-",
      "z", "\"q\"", "a\\b", "AB", "]", "a]", "tab\there", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac"};
  for (const std::string& p : patterns) {
    std::shared_ptr<const Grammar> g = Compile(p);
    ASSERT_NE(g, nullptr) << p;
    std::regex re(p == "^(?<year>\\d{4})$" ? "^(\\d{4})$" : p, std::regex::ECMAScript);
    for (const std::string& s : samples) {
      const std::string quoted = nlohmann::json(s).dump();
      // Multi-byte characters: std::regex works on bytes, so only compare on ASCII samples.
      const bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      if (!ascii) continue;
      EXPECT_EQ(Matches(*g, quoted), std::regex_search(s, re)) << "pattern " << p << " on " << quoted;
    }
  }
}

TEST(PatternToGbnf, DotAndNegatedClassesTakeWholeCharacters) {
  std::shared_ptr<const Grammar> g = Compile("^.{2}$");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(*g, "\"\xc3\xa9\xe6\x97\xa5\""));  // two characters, five bytes
  EXPECT_FALSE(Matches(*g, "\"\xc3\xa9\""));
  std::shared_ptr<const Grammar> n = Compile("^[^a]$");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(Matches(*n, "\"\\\"\""));  // a quote is not 'a', written as JSON requires
  EXPECT_FALSE(Matches(*n, "\"a\""));
}

TEST(PatternToGbnf, UnsupportedFeaturesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(?=a)", "lookaround"}, {"(?!a)", "lookaround"}, {"(?<=a)b", "lookaround"}, {"(a)\\1", "backreference"},
      {"\\bx", "word boundary"}, {"\\p{L}", "unicode property"}, {"a^b", "'^'"}, {"a$b", "'$'"},
      {"(a", "unclosed"}, {"a)", "')'"}, {"[a", "unterminated"}, {"*a", "quantifier"}, {"a**", "quantifier"},
      {"a{2000}", "above"}, {"a{3,2}", "n < m"}, {"[z-a]", "out of order"}, {"\\", "trailing"},
      {"[]a]", "no character"}};
  for (const auto& [p, what] : cases) {
    StatusOr<std::string> r = PatternToGbnf(p, "char");
    ASSERT_FALSE(r.ok()) << p << " compiled to " << *r;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << p << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace ember::grammar::schema_regex
