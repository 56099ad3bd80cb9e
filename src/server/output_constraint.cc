#include "server/output_constraint.h"

#include "grammar/json_schema.h"
#include "server/tool_grammar.h"

namespace ember::server {

namespace {

ApiResult<std::shared_ptr<const grammar::Grammar>> Compile(const std::string& gbnf, const std::string& param) {
  StatusOr<std::shared_ptr<const grammar::Grammar>> g = grammar::ParseGbnf(gbnf);
  if (!g.ok()) return InvalidRequest("'" + param + "': " + g.status().message(), param);
  return std::move(g).value();
}

// The answer to a compile stopped because the client left: nobody reads it (nginx's "client closed").
ApiError ClientLeft(const std::string& message) { return {499, "client_closed_request", message, ""}; }

}  // namespace

ApiResult<std::shared_ptr<const grammar::Grammar>> BuildOutputGrammar(const InferenceBackend& backend,
                                                                      const CompletionRequest& req,
                                                                      const std::function<bool()>& client_gone) {
  grammar::CompileBudget budget({}, client_gone);
  const bool forced_tool = req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kFunction;
  const int asked = (forced_tool ? 1 : 0) + (req.response_format != ResponseFormat::kText ? 1 : 0) +
                    (req.grammar.empty() ? 0 : 1);
  if (asked > 1) {
    return InvalidRequest("only one of response_format, grammar and a forced tool_choice may be given",
                          forced_tool ? "tool_choice" : "grammar");
  }
  if (forced_tool) {
    ApiResult<std::string> gbnf = ToolCallGbnf(backend.tool_call_syntax(), req, &budget);
    if (budget.was_cancelled()) return ClientLeft(budget.status().message());
    if (!gbnf.ok()) return gbnf.error();
    return Compile(gbnf.value(), "tool_choice");
  }
  if (req.response_format == ResponseFormat::kJsonObject) {
    return Compile(grammar::AnyJsonObjectGbnf(), "response_format");
  }
  if (req.response_format == ResponseFormat::kJsonSchema) {
    // The text keeps the schema's property order where the parser kept it.
    grammar::JsonSchemaOptions options;
    options.budget = &budget;
    StatusOr<std::string> gbnf = grammar::JsonSchemaTextToGbnf(req.json_schema, options);
    if (budget.was_cancelled()) return ClientLeft(budget.status().message());
    if (!gbnf.ok()) {
      return InvalidRequest("'response_format.json_schema.schema': " + gbnf.status().message(), "response_format");
    }
    StatusOr<std::shared_ptr<const grammar::Grammar>> g = grammar::ParseGbnf(gbnf.value());
    if (!g.ok()) {  // e.g. required properties that recurse for ever: no finite value
      return InvalidRequest("'response_format.json_schema.schema' admits no value a reply could finish (" +
                                g.status().message() + ")",
                            "response_format");
    }
    return std::move(g).value();
  }
  if (!req.grammar.empty()) return Compile(req.grammar, "grammar");
  return std::shared_ptr<const grammar::Grammar>();
}

}  // namespace ember::server
