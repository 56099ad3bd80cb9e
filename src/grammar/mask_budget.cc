#include "grammar/mask_budget.h"

#include <string>

#include "grammar/grammar_matcher.h"

namespace ember::grammar {

Status MaskBudget::Check() const {
  if (!exhausted()) return Status::Ok();
  return InvalidArgument("grammar too costly: mask work budget exhausted (" + std::to_string(spent_) +
                         " parse-stack expansions spent, " + std::to_string(credit_) +
                         " allowed so far: a credit per request plus one per generated token; docs/grammar.md)");
}

Status ProbeFirstMask(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                      uint64_t max_work) {
  GrammarMatcher m(std::move(grammar), std::move(vocab));
  StatusOr<bool> ready = m.Prepare(max_work);
  if (!ready.ok()) return ready.status();
  if (*ready) return Status::Ok();
  return InvalidArgument("grammar too costly: the mask of the first token needs more than " +
                         std::to_string(max_work) +
                         " parse-stack expansions (the mask work budget's up-front probe; docs/grammar.md)");
}

}  // namespace ember::grammar
