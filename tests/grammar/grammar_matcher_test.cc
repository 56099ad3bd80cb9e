// GrammarMatcher over a small hand-made vocabulary: masks, Accept, end-of-generation, Clone, and the
// mask cache. (tests/engine/grammar_mask_test.cc checks masks against brute force on real vocabularies.)
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/vocabulary.h"

namespace ember::grammar {
namespace {

// ids: 0 "a", 1 "b", 2 "ab", 3 "1", 4 "12", 5 "x", 6 "\xC3" (half of é), 7 "\xA9", 8 <eos> (control, EOG),
// 9 "" (unused), 10 "<ctl>" (control)
std::shared_ptr<const Vocabulary> TestVocab() {
  std::vector<std::string> pieces = {"a", "b", "ab", "1", "12", "x", "\xC3", "\xA9", "<eos>", "", "<ctl>"};
  std::vector<bool> control(pieces.size(), false);
  control[8] = control[10] = true;
  return Vocabulary::Create(pieces, control, {8});
}

std::shared_ptr<const Grammar> Parse(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

std::set<int32_t> Allowed(GrammarMatcher& m, size_t n_logits = 11) {
  std::vector<float> logits(n_logits, 1.0f);
  m.Mask(logits);
  std::set<int32_t> out;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isinf(logits[i])) out.insert(static_cast<int32_t>(i));
  }
  return out;
}

TEST(GrammarMatcher, TrieIsPreorder) {
  auto v = TestVocab();
  // "a" < "ab" share a node; every node's subtree end is past it; control / empty tokens are absent.
  std::set<int32_t> in_trie(v->trie_tokens().begin(), v->trie_tokens().end());
  EXPECT_EQ(in_trie, (std::set<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (size_t i = 0; i < v->trie_size(); ++i) EXPECT_GT(v->trie()[i].end, i);
  EXPECT_TRUE(v->IsEog(8));
  EXPECT_TRUE(v->piece(10).empty());
}

TEST(GrammarMatcher, MaskFollowsTheGrammar) {
  GrammarMatcher m(Parse("root ::= \"a\" \"b\"? [0-9]+"), TestVocab());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{0, 2}));
  ASSERT_TRUE(m.Accept(0).ok());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{1, 3, 4}));
  EXPECT_FALSE(m.Complete());
  ASSERT_TRUE(m.Accept(4).ok());
  EXPECT_TRUE(m.Complete());
  EXPECT_FALSE(m.OnlyEndCanFollow());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{3, 4, 8}));  // more digits, or the end
  ASSERT_TRUE(m.Accept(8).ok());
  EXPECT_TRUE(m.OnlyEndCanFollow());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{}));
  EXPECT_FALSE(m.Accept(3).ok());
}

TEST(GrammarMatcher, AcceptRefusesWhatMaskBans) {
  GrammarMatcher m(Parse("root ::= \"ab\""), TestVocab());
  for (int32_t bad : {1, 3, 8, 9, 10, -1, 11, 1000}) {
    Status s = m.Accept(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("no token of the vocabulary can continue the grammar"), std::string::npos);
  }
  // The state is unchanged by a refused token.
  ASSERT_TRUE(m.Accept(0).ok());
  ASSERT_TRUE(m.Accept(1).ok());
  EXPECT_TRUE(m.Complete());
  EXPECT_TRUE(m.OnlyEndCanFollow());
}

TEST(GrammarMatcher, MultiByteCharactersAcrossTokens) {
  GrammarMatcher m(Parse("root ::= \"\xC3\xA9\" \"x\""), TestVocab());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{6}));
  ASSERT_TRUE(m.Accept(6).ok());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{7}));
  ASSERT_TRUE(m.Accept(7).ok());
  EXPECT_EQ(Allowed(m), (std::set<int32_t>{5}));
}

TEST(GrammarMatcher, LogitsBeyondTheVocabularyAreBanned) {
  GrammarMatcher m(Parse("root ::= [a-z]*"), TestVocab());
  const std::set<int32_t> allowed = Allowed(m, 20);
  EXPECT_EQ(allowed, (std::set<int32_t>{0, 1, 2, 5, 8}));
}

TEST(GrammarMatcher, CloneIsIndependent) {
  GrammarMatcher m(Parse("root ::= \"a\" (\"b\" | \"1\")"), TestVocab());
  ASSERT_TRUE(m.Accept(0).ok());
  auto c = m.Clone();
  ASSERT_TRUE(c->Accept(1).ok());
  EXPECT_TRUE(c->Complete());
  EXPECT_FALSE(m.Complete());
  ASSERT_TRUE(m.Accept(3).ok());  // the original still takes the other branch
  EXPECT_TRUE(m.Complete());
  EXPECT_FALSE(c->Accept(3).ok());
}

TEST(GrammarMatcher, RepeatedStatesHitTheMaskCache) {
  GrammarMatcher m(Parse("root ::= [a-z]+ \"1\""), TestVocab());
  for (int i = 0; i < 50; ++i) {
    (void)Allowed(m);
    ASSERT_TRUE(m.Accept(0).ok());
  }
  EXPECT_EQ(m.stats().masks, 50);
  EXPECT_LE(m.stats().mask_misses, 2);  // the start, then the one state inside [a-z]+
}

TEST(GrammarMatcher, StateBlowupResetsTheCachesNotTheState) {
  // Each "(" nests one level deeper: new DFA states without bound; the matcher must carry on.
  std::vector<std::string> pieces = {"(", ")", "x"};
  auto vocab = Vocabulary::Create(pieces, {false, false, false}, {});
  GrammarMatcher m(Parse("root ::= e\ne ::= \"(\" e \")\" | \"x\""), vocab);
  const int depth = static_cast<int>(GrammarMatcher::kMaxStates) + 100;
  for (int i = 0; i < depth; ++i) ASSERT_TRUE(m.Accept(0).ok());
  ASSERT_TRUE(m.Accept(2).ok());
  EXPECT_GE(m.stats().resets, 1);
  for (int i = 0; i < depth; ++i) ASSERT_TRUE(m.Accept(1).ok()) << i;
  EXPECT_TRUE(m.Complete());
  EXPECT_TRUE(m.OnlyEndCanFollow());
}

}  // namespace
}  // namespace ember::grammar
