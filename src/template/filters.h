// Filters (`x | name`, `x | name(args)`) and tests (`x is name`).
//
// Filters dispatch on the operand's type like the reference renderer, so a filter that does not apply to
// a type is an error naming both (e.g. `none | string`), never a silently different rendering. Two
// extensions over the reference, from Python Jinja: `select`/`reject` with a test name, and `map` with a
// filter name. Everything else unknown is an Unimplemented error.
#pragma once

#include <memory>
#include <string>

#include "template/ast.h"
#include "template/value.h"
#include "util/status.h"

namespace ember::jinja {

class Evaluator;
struct Env;

StatusOr<Value> ApplyFilter(Evaluator& ev, const Filter& filter, const Value& operand,
                            const std::shared_ptr<Env>& env);

// `operand is name` (arg: the second operand of two-argument tests such as equalto, or null).
StatusOr<bool> ApplyTest(const std::string& name, const Value& operand, const Value* arg);

}  // namespace ember::jinja
