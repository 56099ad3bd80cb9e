// The checks ParseGbnf runs on a flattened grammar so that matching is total and terminates:
//   * every rule reachable from the root is productive (derives some finite text), so a live matcher
//     state can always be completed — IsPrefix is "the state is not dead";
//   * no left recursion: no rule reaches itself through references preceded only by nullable elements,
//     unless every such reference is the last of its alternative (a tail call, which the matcher
//     folds, so `("a"?)*` is fine while `expr ::= expr "+" term` is refused).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "grammar/grammar_impl.h"
#include "util/status.h"

namespace ember::grammar {

struct SourceElement {
  Element element;
  size_t pos = 0;  // byte offset in the grammar text
};

struct CheckInput {
  std::string_view text;
  std::vector<size_t> element_pos;  // parallel to Grammar::elements
  std::vector<size_t> rule_pos;     // per rule: where it is defined
};

Status CheckGrammar(const Grammar& g, const CheckInput& in);

}  // namespace ember::grammar
