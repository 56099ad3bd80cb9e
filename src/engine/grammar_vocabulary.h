// The grammar matchers' view of a tokenizer's vocabulary (grammar/vocabulary.h): each token's text as
// generated output renders it, its control flag, and the end-of-generation ids.
#pragma once

#include <memory>

#include "grammar/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace ember {

// Costs a pass over the vocabulary and a sort of it (tens of ms for 150k tokens): build once per model.
std::shared_ptr<const grammar::Vocabulary> MakeGrammarVocabulary(const Tokenizer& tokenizer);

}  // namespace ember
