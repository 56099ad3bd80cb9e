// The mask work one request's grammar may spend (docs/grammar.md, "Mask work budget"), so that a costly
// grammar costs its own request time and never its neighbours'.
//
// The unit is one parse-stack expansion of the matcher's automaton (Automaton::total_work): the work an
// ambiguous grammar multiplies, and close to proportional to the time a mask takes. The rule:
//   * probe: before generation the server computes the first mask with at most kMaskProbeWork units; a
//     grammar that needs more is refused up front (400) — no generation starts;
//   * per pass: one mask's trie pass stops at GrammarMatcher::kMaskWorkFactor × max_state_work units
//     (2^22 by default) and keeps the tokens it verified (grammar_matcher.h);
//   * per step: a sequence in a batch spends at most kMaskStepWork units (plus at most one DFA state's
//     max_state_work) on its next mask before each forward pass; a mask that is not ready by then keeps
//     the sequence out of that step (engine/batch_runner.h), so the others' steps never wait for it;
//   * per request: the matcher may spend kMaskRequestCredit plus kMaskCreditPerToken for every token
//     it has accepted; past that the generation ends with MaskBudgetExhausted (a 400 / an error event).
#pragma once

#include <cstdint>
#include <memory>

#include "util/status.h"

namespace ember::grammar {

inline constexpr uint64_t kMaskProbeWork = uint64_t{1} << 17;
inline constexpr uint64_t kMaskStepWork = uint64_t{1} << 16;
inline constexpr uint64_t kMaskRequestCredit = uint64_t{1} << 25;
inline constexpr uint64_t kMaskCreditPerToken = uint64_t{1} << 21;

// A request's account: units spent against credit earned. Copyable (a cloned matcher carries its own).
class MaskBudget {
 public:
  MaskBudget() = default;
  MaskBudget(uint64_t credit, uint64_t per_token) : credit_(credit), per_token_(per_token) {}

  void Spend(uint64_t units) { spent_ += units; }
  void EarnToken() { credit_ += per_token_; }
  bool exhausted() const { return spent_ > credit_; }
  uint64_t spent() const { return spent_; }
  uint64_t credit() const { return credit_; }
  // Ok, or the error that ends the request (InvalidArgument: the grammar, not the server, is at fault).
  Status Check() const;

 private:
  uint64_t spent_ = 0;
  uint64_t credit_ = kMaskRequestCredit;
  uint64_t per_token_ = kMaskCreditPerToken;
};

class Grammar;
class Vocabulary;

// The up-front probe: Ok when the grammar's first mask over `vocab` takes at most `max_work` units, else
// InvalidArgument "grammar too costly: ..." naming the limit. Costs at most about max_work units.
Status ProbeFirstMask(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                      uint64_t max_work = kMaskProbeWork);

}  // namespace ember::grammar
