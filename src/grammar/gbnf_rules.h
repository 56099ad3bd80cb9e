// The parser's rules before flattening (gbnf.cc builds them, gbnf_normalize.cc rewrites them). Internal
// to the grammar module.
#pragma once

#include <cstddef>
#include <vector>

#include "grammar/grammar_checks.h"

namespace ember::grammar {

// What made a rule: the text's own `name ::=`, or the parser for a group or an operator. The parser's
// rules have a fixed shape the normalisation relies on: kStar is `S ::= a S | ""`, kOpt is `O ::= a | ""`.
enum class RuleKind : uint8_t { kNamed, kGroup, kStar, kOpt };

struct ParsedRule {
  std::vector<std::vector<SourceElement>> alts;
  size_t def_pos = 0;  // where it is defined (or, for a group / repetition, where that starts)
  bool defined = false;
  size_t first_ref = 0;
  RuleKind kind = RuleKind::kNamed;
};

// Rewrites repetitions of things that can match nothing into single loops, keeping the language:
// x x* -> x* when x is nullable (so (x?)+ is (x?)*), and the body of a star loses what a star adds
// nothing to: (y*)* (y?)* (y+)* -> y*, (A | "")* -> A*, (A | (B | C))* -> (A | B | C)*, and
// (x? y?)* -> (x | y)* (a sequence of nullable parts). Nested nullable loops otherwise make the
// matcher's states grow exponentially with the depth (each level multiplies the ways to reach the same
// character). Only the parser's own rules are looked into, so the work is linear in the grammar.
void CollapseNullableLoops(std::vector<ParsedRule>& rules);

}  // namespace ember::grammar
