// Placeholder until the grammar engine lands (issue #17, helper `grammar`): refuses every grammar.
#include "grammar/grammar.h"

namespace ember::grammar {

class Grammar {};

StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view, std::string_view, const GbnfLimits&) {
  return Unimplemented("grammars are not implemented yet");
}
bool Matches(const Grammar&, std::string_view) { return false; }
bool IsPrefix(const Grammar&, std::string_view) { return false; }

}  // namespace ember::grammar
