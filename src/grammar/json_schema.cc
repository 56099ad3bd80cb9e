// Placeholder until the schema compiler lands (issue #17, helper `schema`).
#include "grammar/json_schema.h"

#include <nlohmann/json.hpp>

namespace ember::grammar {

StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json&, const JsonSchemaOptions&) {
  return Unimplemented("JSON Schema is not implemented yet");
}
std::string AnyJsonObjectGbnf(const JsonSchemaOptions&) { return ""; }

}  // namespace ember::grammar
