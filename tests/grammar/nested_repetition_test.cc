// Nested repetitions of things that can match nothing, and other grammars whose matcher states multiply:
// the nullable ones collapse into one loop at parse time (same language, a handful of parse stacks), and
// what cannot be collapsed is bounded by GbnfLimits::max_state_work — refused at parse time when the
// first states already pass it, otherwise cut off with an error that names the limit. Before either,
// `((((("a"? | "")+++)+++)+++)+++)+++` took over 35 s (and 13 nested `("a"? | "")+` crashed: the start
// state went past kMaxStacks and was dead).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "grammar/grammar_impl.h"
#include "grammar/grammar_matcher.h"
#include "grammar/vocabulary.h"

namespace ember::grammar {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Grammar> Parse(std::string_view text, const GbnfLimits& limits = {}) {
  auto g = ParseGbnf(text, "root", limits);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::string Nest(std::string inner, int depth, std::string_view op) {
  for (int i = 0; i < depth; ++i) inner = "(" + inner + ")" + std::string(op);
  return inner;
}

// Every string over `alphabet` up to `max_len` characters.
std::vector<std::string> AllStrings(std::string_view alphabet, size_t max_len) {
  std::vector<std::string> out = {""};
  for (size_t begin = 0, len = 1; len <= max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

// Walks `text` through a fresh automaton and returns the parse-stack expansions it took: the work the
// nesting used to multiply.
uint64_t WorkToWalk(const Grammar& g, std::string_view text) {
  Automaton a(g);
  int32_t s = a.start();
  for (char c : text) s = a.Next(s, static_cast<uint8_t>(c));
  EXPECT_FALSE(a.over_budget()) << text;
  return a.total_work();
}

struct Equivalent {
  std::string nested;     // the grammar that used to blow up
  std::string reference;  // the same language, written flat
  std::string alphabet;
};

TEST(NestedRepetition, CollapsesToTheSameLanguageInFewStacks) {
  const std::vector<Equivalent> cases = {
      {"root ::= (((((\"a\"? | \"\")+++)+++)+++)+++)+++", "root ::= \"a\"*", "ab"},
      {"root ::= " + Nest("\"a\"?", 11, "+"), "root ::= \"a\"*", "ab"},
      {"root ::= " + Nest("\"a\"? | \"\"", 13, "+"), "root ::= \"a\"*", "ab"},
      {"root ::= " + Nest("\"a\"?", 30, "*"), "root ::= \"a\"*", "ab"},
      {"root ::= ((((\"a\"? \"b\"?)+)+ \"c\"?)+)+", "root ::= [abc]*", "abcx"},
      {"root ::= \"x\" ((\"a\" | \"b\"?)*)+ \"y\"", "root ::= \"x\" [ab]* \"y\"", "abxy"},
      {"root ::= ((\"ab\"? | \"c\")+)+", "root ::= (\"ab\" | \"c\")*", "abc"},
      {"root ::= ((\"a\"+)+)+", "root ::= \"a\"+", "ab"},
      {"root ::= (((\"a\"? \"b\")*)+)*", "root ::= (\"a\"? \"b\")*", "ab"},
      {"root ::= ((\"a\"?){2,})+", "root ::= \"a\"*", "ab"},
      {"root ::= (((\"a\"?){0,3})+)+", "root ::= \"a\"*", "ab"},
      {"root ::= (x+ | \"b\")+\nx ::= \"a\"?", "root ::= [ab]*", "ab"},
  };
  for (const Equivalent& c : cases) {
    auto nested = Parse(c.nested);
    auto reference = Parse(c.reference);
    ASSERT_TRUE(nested && reference);
    for (const std::string& s : AllStrings(c.alphabet, 5)) {
      EXPECT_EQ(Matches(*nested, s), Matches(*reference, s)) << c.nested << " on '" << s << "'";
      EXPECT_EQ(IsPrefix(*nested, s), IsPrefix(*reference, s)) << c.nested << " on '" << s << "'";
    }
    // Exponential before: millions of expansions (or a crash) for the first of these.
    EXPECT_LE(WorkToWalk(*nested, "aaaaaaaa"), 400u) << c.nested;
  }
}

// a_k ::= a_{k-1} "b" | a_{k-1} "c": each level doubles the return frames under the first character, and
// nothing can be collapsed (the continuations differ). `prefix` goes in front of a_depth.
// (Built with appends: GCC 12 warns falsely, -Wrestrict, on long chains of string `+`.)
std::string Levels(int depth, std::string_view first, std::string_view left, std::string_view right) {
  std::string g = "a0 ::= ";
  g.append(first).append("\n");
  for (int k = 1; k <= depth; ++k) {
    std::string prev = "a";
    prev.append(std::to_string(k - 1));
    g.append("a").append(std::to_string(k)).append(" ::= ").append(prev).append(" ").append(left);
    g.append(" | ").append(prev).append(" ").append(right).append("\n");
  }
  return g;
}

std::string Doubling(int depth, std::string_view prefix) {
  std::string g = "root ::= ";
  g.append(prefix).append(" a").append(std::to_string(depth)).append("\n");
  return g + Levels(depth, "\"x\"", "\"b\"", "\"c\"");
}

TEST(NestedRepetition, AmbiguityPastTheBudgetIsRefusedAtParseTime) {
  auto start = ParseGbnf(Doubling(20, ""));
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(start.status().message(), HasSubstr("max_state_work"));
  EXPECT_THAT(start.status().message(), HasSubstr("start state"));

  auto after_one = ParseGbnf(Doubling(20, "\"q\""));
  ASSERT_FALSE(after_one.ok());
  EXPECT_THAT(after_one.status().message(), HasSubstr("max_state_work"));
  EXPECT_THAT(after_one.status().message(), HasSubstr("'q'"));

  // The limit is the caller's: the same shape fits a larger budget, and a small one refuses less.
  EXPECT_TRUE(ParseGbnf(Doubling(8, "")).ok());
  GbnfLimits small;
  small.max_state_work = 64;
  auto refused = ParseGbnf(Doubling(8, ""), "root", small);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("more than 64 parse-stack expansions"));
}

TEST(NestedRepetition, AmbiguityPastTheBudgetLaterIsAnErrorNamingTheLimit) {
  // The blow-up starts two characters in, past what ParseGbnf tries: the matcher refuses there.
  auto g = Parse(Doubling(20, "\"q\" \"q\""));
  ASSERT_TRUE(g);
  EXPECT_FALSE(IsPrefix(*g, "qqx"));
  std::vector<std::string> pieces = {"q", "x", "b", "c"};
  GrammarMatcher m(g, Vocabulary::Create(pieces, std::vector<bool>(pieces.size(), false), {}));
  ASSERT_TRUE(m.Accept(0).ok());
  std::vector<float> logits(pieces.size(), 0.0f);
  m.Mask(logits);
  EXPECT_TRUE(std::isinf(logits[0]));  // the state after the second "q" is the one past the budget
  auto st = m.Accept(0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("max_state_work"));
}

TEST(NestedRepetition, OneMaskPassIsBoundedAndAllowsOnlyRealTokens) {
  // 512 stacks at the start and ~1000 after one character, each state under the per-state budget, and a
  // vocabulary of all 94^2 two-character printable ASCII tokens: the whole mask would cost 94 transitions
  // at each depth, more than kMaskWorkFactor states' worth.
  const std::string g = "root ::= a9 [!-~]*\n" + Levels(9, "[!-~]", "[!-O]?", "[P-~]?");
  GbnfLimits limits;
  limits.max_state_work = 4096;
  auto grammar = Parse(g, limits);
  ASSERT_TRUE(grammar);
  std::vector<std::string> pieces;
  for (char c1 = '!'; c1 <= '~'; ++c1) {
    for (char c2 = '!'; c2 <= '~'; ++c2) pieces.push_back(std::string{c1, c2});
  }
  auto vocab = Vocabulary::Create(pieces, std::vector<bool>(pieces.size(), false), {});
  GrammarMatcher m(grammar, vocab);
  std::vector<float> logits(pieces.size(), 0.0f);
  m.Mask(logits);
  EXPECT_EQ(m.stats().cut_masks, 1);
  // A cut mask holds fewer tokens, never a wrong one: those allowed are accepted (every 31st checked).
  std::vector<int32_t> allowed;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (!std::isinf(logits[t])) allowed.push_back(static_cast<int32_t>(t));
  }
  EXPECT_GE(allowed.size(), 1u);
  EXPECT_LT(allowed.size(), pieces.size());
  for (size_t i = 0; i < allowed.size(); i += 31) {
    auto copy = m.Clone();
    EXPECT_TRUE(copy->Accept(allowed[i]).ok()) << pieces[static_cast<size_t>(allowed[i])];
  }
}

}  // namespace
}  // namespace ember::grammar
