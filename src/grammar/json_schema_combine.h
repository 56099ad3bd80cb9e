// The JSON Schema compiler's view of schemas that refer to or combine others (internal to grammar/):
// local $ref resolution, allOf folded into one schema, and the check that lets oneOf be compiled as anyOf
// (its branches must be provably disjoint, or a value matching two would be emitted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/compile_budget.h"
#include "util/status.h"

// The compiler works on ordered_json so that properties keep the order the schema declares them in.

namespace ember::grammar::schema_combine {

// "/a/b" + key, with ~ and / escaped as JSON pointers spell them.
std::string PointerAppend(const std::string& ptr, const std::string& key);

// The target of a local reference ("#", "#/$defs/x", "#/definitions/x", any "#/json/pointer").
// `where` is the pointer of the $ref, for the message.
StatusOr<const nlohmann::ordered_json*> ResolveRef(const nlohmann::ordered_json& root, const nlohmann::ordered_json& ref,
                                           const std::string& where);

// `schema` with its allOf (and a $ref that has sibling keywords) folded into one equivalent schema:
// properties merged (a property in several branches becomes an allOf of its schemas), required united,
// type lists intersected, bounds tightened, additionalProperties false honoured. A conflict the fold cannot
// express is InvalidArgument naming the keyword.
// `budget` is shared by a whole compile and decremented per schema folded; below zero is an error.
// `meter` (time, cancellation) is stepped per schema folded and per property / value compared.
StatusOr<nlohmann::ordered_json> FoldAllOf(const nlohmann::ordered_json& root, const nlohmann::ordered_json& schema,
                                           const std::string& ptr, int64_t* budget, CompileBudget* meter);

// OK when no JSON value can match two of `branches` (compared by type, const/enum values, a discriminating
// required property, or required keys the other branch cannot have); else InvalidArgument.
Status CheckDisjoint(const nlohmann::ordered_json& root, const std::vector<nlohmann::ordered_json>& branches,
                     const std::string& ptr, int64_t* budget, CompileBudget* meter);

// Types a schema's compiled grammar can produce ("object", "array", "string", "number", "integer",
// "boolean", "null"), from `type` or inferred from the keywords present; empty = any.
std::vector<std::string> TypesOf(const nlohmann::ordered_json& schema);

}  // namespace ember::grammar::schema_combine
