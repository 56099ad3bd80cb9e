// Prompt lookup (n-gram) drafting: when the context's last n tokens occurred earlier in the context,
// propose the tokens that followed them there. Free to compute (one backwards scan of the context, no
// model), and right exactly when the reply repeats the prompt or itself: code edits, quoting, lists.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember {

// Appends max_draft tokens to *out: the continuation of the longest tail n-gram (ngram_min <= n <=
// ngram_max) that occurs earlier in `context` (among equally long matches the latest), read on into the
// drafted tokens when it reaches the end (a loop drafts the loop on). Nothing if no tail of ngram_min
// tokens recurs. Returns the tokens appended.
int NgramDraft(std::span<const int32_t> context, int ngram_min, int ngram_max, int max_draft,
               std::vector<int32_t>* out);

}  // namespace ember
