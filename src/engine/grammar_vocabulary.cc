#include "engine/grammar_vocabulary.h"

#include <string>
#include <vector>

namespace ember {

std::shared_ptr<const grammar::Vocabulary> MakeGrammarVocabulary(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  std::vector<std::string> pieces(static_cast<size_t>(n));
  std::vector<bool> control(static_cast<size_t>(n), false);
  for (int32_t id = 0; id < n; ++id) {
    control[static_cast<size_t>(id)] = tokenizer.IsControl(id);
    // The bytes the server streams for the token (TokenEvent::piece): the grammar constrains what the
    // client receives.
    pieces[static_cast<size_t>(id)] = std::string(tokenizer.TokenToPiece(id, /*render_special=*/false));
  }
  return grammar::Vocabulary::Create(std::move(pieces), control, tokenizer.eog_ids());
}

}  // namespace ember
