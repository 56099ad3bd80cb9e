// The drafting side of speculative decoding (docs/speculative.md): a Drafter proposes tokens to follow
// a sequence's context, a DraftPacer decides how many to ask for so that drafting that keeps failing
// costs (almost) nothing. Both are one sequence's, used from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculative_options.h"
#include "util/status.h"

namespace ember {

class Engine;
class Sequence;

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Appends up to `limit` tokens proposed to follow held + [pending] (held: the sequence's tokens).
  // Deterministic (q is one-hot), so the sampler's rejection rule needs only p(draft).
  virtual void Draft(std::span<const int32_t> held, int32_t pending, int limit, std::vector<int32_t>* out) = 0;
};

// How many tokens to draft next. Starts at draft_max; a wholly accepted draft doubles the length (up
// to draft_max), a partly accepted one sets it to what was accepted plus one, and drafts that are
// rejected outright back off: after the second miss in a row drafting pauses for 1, 2, 4 ... 32
// steps, so a drafter that is wrong on this text stops costing verification rows.
class DraftPacer {
 public:
  explicit DraftPacer(int draft_max);
  int Next();  // tokens to draft this step (0: none)
  void Record(int drafted, int accepted);

 private:
  int max_, len_, misses_ = 0, pause_ = 0;
};

// The drafter options.mode asks for (Validate()d options; kDraft needs options.draft_engine).
StatusOr<std::unique_ptr<Drafter>> MakeDrafter(const SpeculativeOptions& options);

// A draft model must share the target's vocabulary: same size and the same text for every token id.
Status CheckDraftModel(const Engine& target, const Engine& draft);

// draft_max clamped so that a verification can always be rolled back: a sliding-window layer's state
// stays trimmable only its margin back (kv/kv_state.h), and n_ctx bounds the verified positions.
int MaxDraftTokens(const Engine& engine, int draft_max);

}  // namespace ember
