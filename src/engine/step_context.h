// The activation buffers of a batched step (Engine::Step): one forward pass over rows of several
// sequences — each running sequence's decode token and chunks of prompts being admitted — so that every
// weight is read once per step instead of once per sequence. Sized once for the most rows and the
// most sequences a step may carry; reused step after step by one thread (the batch runner's).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/forward.h"
#include "util/status.h"

namespace ember {

class Sequence;

// One sequence's part of a step: forward `tokens` after its state; with `logits`, the step computes the
// logits of the last of them; with `all_logits` too, of every one of them (speculative verification:
// rows are consecutive from StepContext::logits(i)).
struct StepSlice {
  Sequence* seq = nullptr;
  std::span<const int32_t> tokens;
  bool logits = false;
  bool all_logits = false;
};

class StepContext {
 public:
  // max_tokens: rows per step, all slices together; max_seqs: slices per step (each may want logits);
  // max_logit_rows: logit rows per step, all slices together (0: max_seqs, one per slice).
  StepContext(const Model& model, int64_t max_tokens, int max_seqs, int64_t max_ctx, int64_t max_logit_rows = 0);

  int64_t max_tokens() const { return fwd_.max_ubatch(); }
  int max_seqs() const { return max_seqs_; }
  // Logits (n_vocab floats) of slice i of the last Step (an all_logits slice: its first row, the others
  // follow); null if it asked for none or failed. Valid until the next Step on this context.
  const float* logits(size_t i) const { return fwd_.slice_logits(i); }
  OpTimes& op_times() { return fwd_.times(); }

 private:
  friend class Engine;
  ForwardContext fwd_;
  int max_seqs_;
};

}  // namespace ember
