// The mask work budget (grammar/mask_budget.h) on small vocabularies: the account and its error, a mask
// computed in slices (Prepare) equals the one computed whole, a costly grammar trips the request budget
// and the up-front probe, and an ordinary one trips neither. (On the Llama 3 and Qwen 3 vocabularies and
// through the batch runner: tests/engine/mask_budget_engine_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/mask_budget.h"
#include "grammar/vocabulary.h"

namespace ember::grammar {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Grammar> Parse(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

// The 197-byte grammar: 60 optional characters, repeated 0 to 60 times. Each state is cheap
// enough to pass the parse-time ambiguity check, but a trie pass builds many such states.
std::string CostlyGbnf() {
  std::string g = "root ::= (";
  for (int i = 0; i < 60; ++i) g += " .?";
  return g + " ){0,60}";
}

// Every one- and two-character printable ASCII token, and an end-of-generation id.
std::shared_ptr<const Vocabulary> PrintableVocab() {
  std::vector<std::string> pieces;
  for (char c1 = ' '; c1 <= '~'; ++c1) {
    pieces.push_back(std::string(1, c1));
    for (char c2 = ' '; c2 <= '~'; ++c2) pieces.push_back(std::string{c1, c2});
  }
  pieces.push_back("");  // the end-of-generation token (a control token: no text)
  std::vector<bool> control(pieces.size(), false);
  control.back() = true;
  return Vocabulary::Create(pieces, control, {static_cast<int32_t>(pieces.size() - 1)});
}

// The id of the one-character token `c` in PrintableVocab.
int32_t Single(char c) { return (c - ' ') * 96; }

TEST(MaskBudget, ChecksSpentAgainstCreditAndPerTokenEarnings) {
  MaskBudget b(100, 10);
  b.Spend(100);
  EXPECT_TRUE(b.Check().ok());
  b.Spend(1);
  Status st = b.Check();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("grammar too costly: mask work budget exhausted"));
  EXPECT_THAT(st.message(), HasSubstr("101 parse-stack expansions spent, 100 allowed"));
  b.EarnToken();
  EXPECT_TRUE(b.Check().ok());
  EXPECT_EQ(b.credit(), 110u);
  const MaskBudget defaults;
  EXPECT_EQ(defaults.credit(), kMaskRequestCredit);
}

TEST(MaskBudget, ASlicedMaskEqualsTheWholeOne) {
  auto g = Parse(CostlyGbnf());
  ASSERT_TRUE(g);
  auto vocab = PrintableVocab();
  GrammarMatcher whole(g, vocab);
  GrammarMatcher sliced(g, vocab);
  const int32_t a = Single('a');
  for (int step = 0; step < 3; ++step) {
    int calls = 0;
    while (true) {
      StatusOr<bool> ready = sliced.Prepare(1000);
      ASSERT_TRUE(ready.ok()) << ready.status().ToString();
      ++calls;
      if (*ready) break;
      ASSERT_LT(calls, 100000);
    }
    EXPECT_GT(calls, 1) << "step " << step << ": the pass was not sliced";
    EXPECT_EQ(sliced.AllowedBits(), whole.AllowedBits()) << "step " << step;
    EXPECT_EQ(sliced.stats().cut_masks, whole.stats().cut_masks);
    EXPECT_EQ(sliced.budget().spent(), whole.budget().spent()) << "the same work, only spread over calls";
    ASSERT_TRUE(sliced.Accept(a).ok());
    ASSERT_TRUE(whole.Accept(a).ok());
  }
  // Prepare(0) starts nothing: false until the mask is there, true once it is.
  GrammarMatcher fresh(g, vocab);
  StatusOr<bool> none = fresh.Prepare(0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  EXPECT_EQ(fresh.budget().spent(), 0u);
  fresh.AllowedBits();
  none = fresh.Prepare(0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(*none);
}

TEST(MaskBudget, ACostlyGrammarExhaustsTheRequestBudget) {
  auto g = Parse(CostlyGbnf());
  ASSERT_TRUE(g);
  auto vocab = PrintableVocab();
  // A small credit so the test is quick; the rule is the same at the default 2^25 + 2^21 per token.
  GrammarMatcher m(g, vocab, MaskBudget(uint64_t{1} << 20, uint64_t{1} << 10));
  const int32_t a = Single('a');
  Status failed;
  for (int i = 0; i < 1000 && failed.ok(); ++i) {
    StatusOr<bool> ready = m.Prepare(kMaskStepWork);
    if (!ready.ok()) {
      failed = ready.status();
    } else if (*ready) {
      ASSERT_TRUE(m.Accept(a).ok());
    }
  }
  ASSERT_FALSE(failed.ok()) << "the budget never ran out";
  EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(failed.message(), HasSubstr("grammar too costly: mask work budget exhausted"));
  EXPECT_TRUE(m.budget().exhausted());
  // Spent is at most one slice (plus one DFA state) past the credit: the check runs between slices.
  EXPECT_LE(m.budget().spent(), m.budget().credit() + kMaskStepWork + 2 * (uint64_t{1} << 16));
  StatusOr<bool> again = m.Prepare(kMaskStepWork);
  EXPECT_FALSE(again.ok()) << "an exhausted budget stays exhausted";
}

TEST(MaskBudget, TheProbeRefusesACostlyGrammarAndPassesAnOrdinaryOne) {
  auto vocab = PrintableVocab();
  Status costly = ProbeFirstMask(Parse(CostlyGbnf()), vocab);
  ASSERT_FALSE(costly.ok());
  EXPECT_EQ(costly.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(costly.message(), HasSubstr("grammar too costly: the mask of the first token needs more than 131072"));
  EXPECT_TRUE(ProbeFirstMask(Parse(AnyJsonObjectGbnf()), vocab).ok());
  EXPECT_TRUE(ProbeFirstMask(Parse("root ::= [^\\n]*"), vocab).ok());
}

TEST(MaskBudget, AnOrdinaryGrammarStaysFarInsideIt) {
  auto g = Parse(AnyJsonObjectGbnf());
  ASSERT_TRUE(g);
  auto vocab = PrintableVocab();
  std::string doc = "{";
  for (int i = 0; i < 60; ++i) doc += "\"key" + std::to_string(i) + "\": [1, -2.5e3, true, {\"s\": \"x y\"}], ";
  doc += "\"end\": null}";
  GrammarMatcher m(g, vocab);
  for (char c : doc) {
    StatusOr<bool> ready = m.Prepare(kMaskStepWork);
    ASSERT_TRUE(ready.ok()) << ready.status().ToString();
    EXPECT_TRUE(*ready) << "a JSON mask fits one step's slice";
    ASSERT_TRUE(m.Accept(Single(c)).ok()) << c;
  }
  EXPECT_TRUE(m.Complete());
  // Far inside: the whole document cost less than the credit its tokens alone earned.
  EXPECT_LT(m.budget().spent(), doc.size() * kMaskCreditPerToken);
  EXPECT_FALSE(m.budget().exhausted());
}

}  // namespace
}  // namespace ember::grammar
