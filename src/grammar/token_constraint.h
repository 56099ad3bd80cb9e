// A per-sequence restriction on which token may be sampled next: a GBNF grammar, a JSON Schema compiled
// to one, a forced tool call. The sampler asks it to mask the logits before every draw and tells it the
// token drawn; the engine never knows what the constraint is.
//
// Contract (the engine's Generate loop and BatchRunner rely on it):
//   * Mask() sets logits[t] = -inf for every token t that may not come next. It never raises a logit.
//     End-of-generation tokens are allowed exactly when Complete() is true; when nothing else can
//     follow, they are the only tokens allowed.
//   * Accept(t) advances past t. A token Mask() would have banned is an error (the sampler found no
//     allowed token: the grammar cannot be continued with this vocabulary) and the state is unchanged.
//   * Clone() copies the state, so speculative decoding can try drafted tokens and throw them away.
//   * Prepare(max_work) does part of the next Mask()'s work ahead of it, so a caller can bound how long
//     one call holds it (the batch runner keeps a sequence whose mask is not ready out of the step).
//     Mask() without it does the whole work. An error from it ends the generation (the request spent
//     its mask work budget, grammar/mask_budget.h).
// Thread-safety: one sequence's, used from one thread at a time; the immutable grammar and vocabulary
// behind it may be shared by any number of constraints on any threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "util/status.h"

namespace ember::grammar {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual void Mask(std::span<float> logits) = 0;
  virtual Status Accept(int32_t token) = 0;
  virtual bool Complete() const = 0;
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
  // Nothing but the end can follow (the grammar is complete and cannot grow, or it ended): the engine
  // stops there instead of running one more forward pass to sample an end-of-generation token.
  virtual bool OnlyEndCanFollow() const { return false; }
  // Spends at most about `max_work` units of work (the constraint's own measure; a grammar's is
  // parse-stack expansions) toward the next Mask(). true: Mask() is ready and cheap; false: not yet, call
  // again; max_work 0 starts nothing (true only when the mask is ready already).
  virtual StatusOr<bool> Prepare(uint64_t max_work) {
    (void)max_work;
    return true;
  }
};

}  // namespace ember::grammar
