// Options of lossless speculative decoding (docs/speculative.md): a drafter proposes the next few
// tokens, the target model verifies them in one forward pass (a multi-token slice), and the sampler
// accepts a prefix by rejection sampling, so the output is distributed exactly as without speculation
// (greedy: bitwise the same tokens, because the forward pass is batch invariant).
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace ember {

class Engine;

enum class SpecMode {
  kOff,
  kNgram,  // prompt lookup: the tokens that followed the latest earlier occurrence of the context's tail
  kDraft,  // a small draft model with the target's vocabulary, decoded greedily
};

inline constexpr int kMaxDraftTokens = 32;

struct SpeculativeOptions {
  SpecMode mode = SpecMode::kOff;
  int draft_max = 8;             // most tokens drafted per verification, 1..kMaxDraftTokens
  int ngram_min = 2;             // prompt lookup: the shortest tail n-gram that may match
  int ngram_max = 4;             // ... and the longest one tried (longer matches win)
  const Engine* draft_engine = nullptr;  // kDraft: borrowed, loaded by the caller (CheckDraftModel)

  bool enabled() const { return mode != SpecMode::kOff; }
  Status Validate() const;
};

// "off" | "ngram" | "draft".
StatusOr<SpecMode> ParseSpecMode(const std::string& s);
const char* SpecModeName(SpecMode m);

}  // namespace ember
