// Tokens -> AST. The grammar and operator precedence follow @huggingface/jinja (lowest first):
//   ternary `a if c else b` / select `a if c`, or, and, not, comparison and `in`/`not in`,
//   additive (+ - ~ share one level), multiplicative, `**`, `is` tests, `|` filters, unary sign,
//   calls / member access / slicing, primary.
// Statements: if/elif/else, for (tuple targets, inline `if`, else), set (also block set), macro, call
// (with caller arguments), filter blocks, break, continue. Anything else is an error naming the line.
#pragma once

#include <vector>

#include "template/ast.h"
#include "template/lexer.h"
#include "util/status.h"

namespace ember::jinja {

StatusOr<Body> Parse(const std::vector<Token>& tokens);

}  // namespace ember::jinja
