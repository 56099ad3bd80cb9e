// GBNF grammars (llama.cpp's syntax: `name ::= alternatives`, "literals", [char classes], [^negated],
// ( groups ), * + ? and {m,n} repetition, comments with #), parsed into an immutable `Grammar` that any
// number of sequences share. The text is outside data (a request's `grammar` field, or what
// json_schema.h and the tool-call builder emit): every limit below is checked, never trusted.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "util/status.h"

namespace ember::grammar {

struct GbnfLimits {
  size_t max_bytes = 256 * 1024;  // grammar text
  size_t max_rules = 4096;        // after expanding repetitions into rules
  size_t max_nesting = 64;        // ( ( ( ... ) ) ) depth
  size_t max_repeat = 1024;       // the largest m or n of x{m,n}
  size_t max_elements = 1 << 20;  // literal characters, classes and references, after expanding repetitions
  // Parse-stack expansions the matcher may spend building one DFA state. Ambiguous nesting (a rule whose
  // alternatives each call the next level in a different context) multiplies the stacks of a state with
  // every level; past this the grammar is refused when its first states already need it (ParseGbnf tries
  // them), and otherwise the state is dead and the matcher's error names this limit.
  size_t max_state_work = 1 << 16;
};

class Grammar;  // defined by the implementation (gbnf.cc)

// Parses `text`; `root` names the start rule. InvalidArgument with the line, column and reason on bad
// syntax, an undefined rule, left recursion, or a limit passed (including max_state_work, for the start
// state and the states one byte after it).
StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text, std::string_view root = "root",
                                                   const GbnfLimits& limits = {});

// Byte-level matching, independent of any vocabulary (tests, and the schema corpus check):
// whether `text` is a whole sentence of the grammar, and whether it can be extended to one.
bool Matches(const Grammar& g, std::string_view text);
bool IsPrefix(const Grammar& g, std::string_view text);

}  // namespace ember::grammar
