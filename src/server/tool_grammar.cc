#include "server/tool_grammar.h"

#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "server/json_input.h"

namespace ember::server {
namespace {

using nlohmann::json;

// A GBNF string literal of `text` (llama.cpp's escapes), bytes >= 0x80 as they are (UTF-8).
std::string Literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Where a tool's schema sits in the request, for the 400.
std::string SchemaParam(const CompletionRequest& req, size_t i) {
  const std::string base = "tools[" + std::to_string(i) + "]";
  return req.kind == ApiKind::kMessages ? base + ".input_schema" : base + ".function.parameters";
}

// The GBNF of tool `i`'s arguments, value rule "<prefix>root". Arguments are always an object: a schema
// without a type is read as an object schema (what it means for arguments; narrowing never admits JSON
// the schema refuses), one with another type is refused.
ApiResult<std::string> ArgumentsGbnf(const CompletionRequest& req, size_t i, const std::string& prefix,
                                     grammar::CompileBudget* budget) {
  const ToolSpec& tool = req.tools[i];
  const std::string param = SchemaParam(req, i);
  StatusOr<json> parsed = ParseJsonLimited(tool.parameters_json);
  if (!parsed.ok() || !parsed->is_object()) {
    return InvalidRequest("tool '" + tool.name + "': '" + param + "' must be a JSON Schema object", param);
  }
  json schema = std::move(parsed).value();
  grammar::JsonSchemaOptions options;
  options.prefix = prefix;
  options.budget = budget;
  if (schema.empty()) return grammar::AnyJsonObjectGbnf(options);
  auto type = schema.find("type");
  if (type == schema.end()) {
    schema["type"] = "object";
  } else if (*type != "object") {
    return InvalidRequest("tool '" + tool.name + "': '" + param +
                              "' must describe an object (type \"object\"): arguments are a JSON object",
                          param);
  }
  StatusOr<std::string> gbnf = grammar::JsonSchemaToGbnf(schema, options);
  if (!gbnf.ok()) {
    return InvalidRequest("tool '" + tool.name + "': '" + param + "': " + gbnf.status().message(), param);
  }
  return std::move(gbnf).value();
}

}  // namespace

ApiResult<std::string> ToolCallGbnf(ToolCallSyntax syntax, const CompletionRequest& req,
                                    grammar::CompileBudget* budget) {
  grammar::CompileBudget own;
  if (budget == nullptr) budget = &own;
  const bool hermes = syntax == ToolCallSyntax::kHermes;
  const char* args_key = hermes ? "arguments" : "parameters";
  std::string rules;    // one "call-<i>" rule per callable tool, then each tool's schema rules
  std::vector<std::string> calls;
  for (size_t i = 0; i < req.tools.size(); ++i) {
    const ToolSpec& tool = req.tools[i];
    if (req.tool_choice == ToolChoice::kFunction && tool.name != req.tool_choice_name) continue;
    const std::string prefix = "tool" + std::to_string(i) + "-";
    if (Status st = budget->Step(); !st.ok()) return InvalidRequest("'tools': " + st.message(), "tools");
    ApiResult<std::string> args = ArgumentsGbnf(req, i, prefix, budget);
    if (!args.ok()) return args.error();
    // The name as the template writes it: a JSON string.
    const std::string head = "{\"name\": " + json(tool.name).dump(-1, ' ', false, json::error_handler_t::replace) +
                             ", \"" + args_key + "\": ";
    const std::string call = "call-" + std::to_string(i);
    rules += call + " ::= " + Literal(head) + " " + prefix + "root " + Literal("}") + "\n";
    rules += args.value() + "\n";
    calls.push_back(call);
    if (req.tool_choice == ToolChoice::kFunction) break;  // names are the client's: the first one counts
  }
  if (!budget->status().ok()) return InvalidRequest("'tools': " + budget->status().message(), "tools");
  if (calls.empty()) {
    return InvalidRequest(req.tool_choice == ToolChoice::kFunction
                              ? "'tool_choice' names the tool '" + req.tool_choice_name + "', which is not among the tools"
                              : "'tool_choice' forces a tool call but no tools were given",
                          "tool_choice");
  }
  std::string any_call;
  for (size_t i = 0; i < calls.size(); ++i) any_call += (i ? " | " : "") + calls[i];
  std::string top = "call ::= " + any_call + "\n";
  if (hermes) {
    top += "block ::= " + Literal("<tool_call>\n") + " call " + Literal("\n</tool_call>") + "\n";
    top += req.parallel_tool_calls ? "root ::= block (" + Literal("\n") + " block)*\n" : "root ::= block\n";
  } else {
    top += "root ::= call\n";  // Llama 3.x templates refuse more than one call per turn
  }
  return top + rules;
}

}  // namespace ember::server
