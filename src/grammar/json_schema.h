// JSON Schema -> GBNF (grammar.h), for structured output (`response_format` json_schema / json_object,
// the Responses API's text.format) and for tool-call arguments. Every sentence of the emitted grammar is
// JSON valid against the schema; a keyword the compiler cannot enforce is an error naming it and where it
// is (never silently relaxed). Supported: type (and type lists), properties / required /
// additionalProperties (false or a schema; absent or true: only the declared properties are emitted),
// properties in declared order, enum, const, arrays with items / prefixItems / minItems / maxItems, nested
// objects, anyOf / oneOf (oneOf only where its branches are provably disjoint), allOf (folded into one
// schema), $ref to #/$defs and #/definitions (recursion allowed), string minLength / maxLength / pattern
// (a regex subset) / format (date, time, date-time, uuid, email, ipv4), number and integer minimum /
// maximum (exclusive too), and the annotations that constrain nothing (title, description, default,
// examples, $schema, $id, ...). Whitespace, digits and free-value nesting are bounded. What each keyword
// becomes, and what is refused: docs/structured-output.md.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "grammar/compile_budget.h"
#include "util/status.h"

namespace ember::grammar {

struct JsonSchemaOptions {
  // The schema's value rule is `<prefix>root`, and every helper rule starts with `prefix`, so grammars of
  // several schemas (one per tool) can be concatenated into one text.
  std::string prefix;
  // Insignificant whitespace allowed between tokens; bounded so a model cannot pad for ever.
  int max_whitespace = 2;
  // Bytes, rules, time and cancellation, checked while compiling; shared when several schemas make one
  // grammar (tool_grammar.h). Null: a default CompileBudget for this compile alone. On a limit the
  // compile returns InvalidArgument naming it ("schema too large: ... (the limit)"); on cancellation,
  // FailedPrecondition (budget->was_cancelled()).
  CompileBudget* budget = nullptr;
};

// GBNF text of the schema, in work linear in the schema's size. InvalidArgument naming the unsupported
// keyword and its JSON pointer, e.g.
// "unsupported JSON Schema keyword 'patternProperties' at /properties/tags".
// nlohmann::json keeps object keys sorted, so properties are emitted in sorted order here.
StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& options = {});
// The same from the schema's JSON text, emitting properties in the order the text declares them (what
// agents expect: e.g. "reasoning" before "answer"). The caller bounds the text's nesting (util/json_limited.h).
StatusOr<std::string> JsonSchemaTextToGbnf(std::string_view schema_json, const JsonSchemaOptions& options = {});

// `{"type":"object"}` of any shape: the grammar of response_format json_object.
std::string AnyJsonObjectGbnf(const JsonSchemaOptions& options = {});

}  // namespace ember::grammar
