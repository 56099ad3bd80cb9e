// GrammarMatcher's masks against brute force on real vocabularies (Llama 3: 128k tokens; Qwen 3: 152k):
// for grammar states reached by accepting a text's tokens, the allowed set is exactly
// {t : IsPrefix(text + piece(t))}, plus the end-of-generation ids exactly when Matches(text).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/grammar_vocabulary.h"
#include "engine_test_util.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace ember {
namespace {


std::unique_ptr<Tokenizer> VocabOnly(const std::string& family) {
  const std::string dir = testutil::MakeTempDir("grammar-mask");
  const std::string path = testutil::GenModel(dir, family, "--vocab-only --tokenizer " + family);
  auto t = LoadTokenizerFromGguf(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

void CheckAgainstBruteForce(const std::string& family) {
  auto tok = VocabOnly(family);
  ASSERT_NE(tok, nullptr);
  auto vocab = MakeGrammarVocabulary(*tok);
  auto g = grammar::ParseGbnf(grammar::AnyJsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::string doc = "{\"name\": \"caf\xC3\xA9 \\u00e9\", \"n\": [1, -2.5e3, true], \"o\": {}}";
  // Single-byte tokens, to stop inside a UTF-8 character (Encode would not leave half of one).
  std::vector<int32_t> byte_token(256, -1);
  for (int32_t t = 0; t < vocab->size(); ++t) {
    if (vocab->piece(t).size() == 1) byte_token[static_cast<uint8_t>(vocab->piece(t)[0])] = t;
  }
  // States after these many bytes of `doc` (14: inside the two bytes of the e-acute), each reached by
  // accepting the tokens of that prefix. Brute force costs an IsPrefix per token: a few states only.
  for (size_t cut : {size_t{0}, size_t{10}, size_t{14}, size_t{26}, doc.size()}) {
    const std::string text = doc.substr(0, cut);
    std::vector<int32_t> ids = tok->Encode(cut == 14 ? text.substr(0, 13) : text, false, false);
    if (cut == 14) ids.push_back(byte_token[0xC3]);
    grammar::GrammarMatcher m(*g, vocab);
    std::string fed;
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_TRUE(m.Accept(id).ok()) << family << " cut " << cut;
      fed += vocab->piece(id);
    }
    ASSERT_EQ(fed, text) << family << ": the tokens spell the prefix";
    const std::vector<uint64_t> bits = m.AllowedBits();
    int64_t allowed = 0, mismatches = 0;
    for (int32_t t = 0; t < vocab->size(); ++t) {
      const bool got = (bits[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1;
      bool want;
      if (vocab->IsEog(t)) {
        want = grammar::Matches(**g, text);
      } else {
        const std::string_view piece = vocab->piece(t);
        want = !piece.empty() && grammar::IsPrefix(**g, text + std::string(piece));
      }
      allowed += got;
      if (got != want && ++mismatches <= 5) {
        ADD_FAILURE() << family << " cut " << cut << " token " << t << " '" << tok->TokenToPiece(t, false)
                      << "': mask " << got << ", brute force " << want;
      }
    }
    EXPECT_EQ(mismatches, 0);
    EXPECT_GT(allowed, 0) << family << " cut " << cut;
    EXPECT_EQ(m.Complete(), grammar::Matches(**g, text));
  }
}

TEST(GrammarMask, MatchesBruteForceLlama3) { CheckAgainstBruteForce("llama3"); }
TEST(GrammarMask, MatchesBruteForceQwen3) { CheckAgainstBruteForce("qwen3"); }

}  // namespace
}  // namespace ember
