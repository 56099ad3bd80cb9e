#include "engine/ngram_draft.h"

#include <algorithm>

namespace ember {

int NgramDraft(std::span<const int32_t> context, int ngram_min, int ngram_max, int max_draft,
               std::vector<int32_t>* out) {
  const int64_t L = static_cast<int64_t>(context.size());
  ngram_min = std::max(1, ngram_min);
  if (max_draft <= 0 || L < ngram_min + 1 || ngram_max < ngram_min) return 0;
  // j: the last position of a candidate occurrence (j < L - 1, so something follows it). The scan goes
  // backwards so the first match of the longest length is the latest one.
  int best_len = 0;
  int64_t best_end = -1;
  const int32_t last = context[static_cast<size_t>(L - 1)];
  for (int64_t j = L - 2; j >= ngram_min - 1; --j) {
    if (context[static_cast<size_t>(j)] != last) continue;
    int m = 1;
    while (m < ngram_max && j - m >= 0 && context[static_cast<size_t>(j - m)] == context[static_cast<size_t>(L - 1 - m)]) ++m;
    if (m >= ngram_min && m > best_len) {
      best_len = m;
      best_end = j;
      if (m == ngram_max) break;
    }
  }
  if (best_end < 0) return 0;
  // The continuation reads on into the drafted tokens themselves: a tail that repeats with period
  // P = L - 1 - best_end (a loop) drafts the loop on, not only its first P tokens.
  const size_t start = out->size();
  for (int i = 0; i < max_draft; ++i) {
    const int64_t idx = best_end + 1 + i;
    out->push_back(idx < L ? context[static_cast<size_t>(idx)] : (*out)[start + static_cast<size_t>(idx - L)]);
  }
  return max_draft;
}

}  // namespace ember
