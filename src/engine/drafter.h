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

// How many tokens to draft next, from what drafting has earned on this sequence so far. A verified
// forward of 1 + k rows costs about 1 + row_cost * k decode steps (decode reads every weight once for
// one row; the extra rows add their arithmetic: row_cost ~0.2 measured on a 2-core AVX2 machine for
// the demo model, logits rows included). With a per-token acceptance estimate a (counts decayed per
// observed token, so it follows the text), k drafts emit 1 + a(1 - a^k)/(1 - a) tokens per forward; the pacer
// picks the k in [1, draft_max] with the best tokens per unit of cost, and drafts nothing when no k beats
// plain decode by kMinGain. Then it only probes with one token, ever more rarely (after 1, 2, 4 ... 64
// idle steps), so drafting that keeps failing costs about one extra row every 64 steps.
class DraftPacer {
 public:
  static constexpr double kRowCost = 0.2;
  static constexpr double kMinGain = 1.05;
  explicit DraftPacer(int draft_max, double row_cost = kRowCost);
  int Next();  // tokens to draft this step (0: none)
  void Record(int drafted, int accepted);
  double acceptance() const { return hits_ / trials_; }  // the per-token estimate a

 private:
  int max_;
  double row_cost_;
  double hits_ = 0.6, trials_ = 1.0;  // prior a = 0.6 worth one draft token
  int idle_ = 0, wait_ = 0;           // steps without a draft, and how many before the next probe
};

// The drafter options.mode asks for (Validate()d options; kDraft needs options.draft_engine).
StatusOr<std::unique_ptr<Drafter>> MakeDrafter(const SpeculativeOptions& options);

// A draft model must share the target's vocabulary: same size and the same text for every token id.
Status CheckDraftModel(const Engine& target, const Engine& draft);

// draft_max clamped so that a verification can always be rolled back: a sliding-window layer's state
// stays trimmable only its margin back (kv/kv_state.h), and n_ctx bounds the verified positions.
int MaxDraftTokens(const Engine& engine, int draft_max);

}  // namespace ember
