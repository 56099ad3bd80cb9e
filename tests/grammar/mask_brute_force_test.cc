// Masks against brute force on a synthetic vocabulary (every single byte, plus seeded random pieces of
// JSON-ish characters and UTF-8 fragments): at each state along a JSON document, the allowed set is
// exactly {t : IsPrefix(text + piece(t))}, plus EOG exactly when Matches(text). The same check on the
// real Llama 3 / Qwen 3 vocabularies is tests/engine/grammar_mask_test.cc.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/vocabulary.h"

namespace ember::grammar {
namespace {


TEST(MaskBruteForce, SyntheticVocabulary) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> atoms = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\t", "a", "b", "z", "0",
                                          "1", "9", "-", ".", "e", "true", "null", "\\", "\\n", "\\u", "\xC3\xA9",
                                          "\xC3", "\xA9", "\xE2\x82\xAC", "\xE2\x82", "\xAC", "\xF0\x9F\x98\x80", "\x7F"};
  std::mt19937 rng(17);
  for (int i = 0; i < 3000; ++i) {
    std::string p;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) p += atoms[rng() % atoms.size()];
    pieces.push_back(p);
  }
  pieces.push_back("<eos>");
  std::vector<bool> control(pieces.size(), false);
  control.back() = true;
  const int32_t eos = static_cast<int32_t>(pieces.size() - 1);
  auto vocab = Vocabulary::Create(pieces, control, {eos});
  auto g = ParseGbnf(AnyJsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().ToString();

  const std::string doc = "{\"k\": [1, -2.5e3, \"caf\xC3\xA9 \\n\xE2\x82\xAC\"], \"o\": {\"t\": true}}";
  GrammarMatcher m(*g, vocab);
  for (size_t cut = 0; cut <= doc.size(); ++cut) {
    const std::string text = doc.substr(0, cut);
    const std::vector<uint64_t> bits = m.AllowedBits();
    // Every third state (and the last: EOG allowed) keeps the brute force to a few seconds.
    for (int32_t t = 0; (cut % 3 == 0 || cut == doc.size()) && t < vocab->size(); ++t) {
      const bool got = (bits[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1;
      const bool want = t == eos ? Matches(**g, text) : IsPrefix(**g, text + pieces[static_cast<size_t>(t)]);
      ASSERT_EQ(got, want) << "after '" << text << "', token " << t << " '" << pieces[static_cast<size_t>(t)] << "'";
    }
    if (cut < doc.size()) {
      ASSERT_TRUE(m.Accept(static_cast<uint8_t>(doc[cut])).ok()) << cut;  // the one-byte token
    }
  }
  EXPECT_TRUE(m.Complete());
  EXPECT_TRUE(m.Accept(eos).ok());
}

}  // namespace
}  // namespace ember::grammar
