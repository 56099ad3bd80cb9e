// libFuzzer target for the forced tool-call grammar (tool_grammar.h): the first byte picks the model's
// call syntax, the tool_choice (required or the first tool by name) and parallel_tool_calls; the rest
// is a `tools` array's JSON ([{"name": ..., "parameters": {...}}, ...]). Every input must give GBNF or a
// 400 naming a field (never a crash, never another status); the GBNF must fit the compile budget and
// be accepted by ParseGbnf or refused with InvalidArgument (arguments that recurse for ever).
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/compile_budget.h"
#include "grammar/grammar.h"
#include "server/json_input.h"
#include "server/tool_grammar.h"
#include "util/check.h"

namespace {

constexpr size_t kMaxToolsBytes = 16 << 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::json;
  using namespace ember::server;
  if (size < 1 || size > kMaxToolsBytes) return 0;
  const uint8_t mode = data[0];
  auto parsed = ParseJsonLimited(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!parsed.ok() || !parsed->is_array()) return 0;
  CompletionRequest req;
  req.kind = (mode & 8) ? ApiKind::kMessages : ApiKind::kChat;
  for (const json& t : *parsed) {
    if (!t.is_object()) continue;
    ToolSpec spec;
    if (t.contains("name") && t["name"].is_string()) spec.name = t["name"].get<std::string>();
    spec.parameters_json = t.contains("parameters") ? t["parameters"].dump(-1, ' ', false, json::error_handler_t::replace)
                                                    : "{}";
    req.tools.push_back(std::move(spec));
  }
  req.tool_choice = (mode & 1) ? ToolChoice::kFunction : ToolChoice::kRequired;
  if (req.tool_choice == ToolChoice::kFunction && !req.tools.empty()) req.tool_choice_name = req.tools[0].name;
  req.parallel_tool_calls = (mode & 2) != 0;
  const ToolCallSyntax syntax = (mode & 4) ? ToolCallSyntax::kHermes : ToolCallSyntax::kLlama3Json;

  ember::grammar::CompileLimits limits;
  limits.max_bytes = 64 << 10;
  limits.max_rules = 1024;
  limits.max_time = std::chrono::milliseconds(5000);  // under the sanitizers; the run's -timeout is 10 s
  ember::grammar::CompileBudget budget(limits);
  ApiResult<std::string> gbnf = ToolCallGbnf(syntax, req, &budget);
  if (!gbnf.ok()) {
    EMBER_CHECK(gbnf.error().http_status == 400);
    EMBER_CHECK(!gbnf.error().message.empty() && !gbnf.error().param.empty());
    return 0;
  }
  EMBER_CHECK(!req.tools.empty());
  auto g = ember::grammar::ParseGbnf(gbnf.value());
  EMBER_CHECK(g.ok() || g.status().code() == ember::StatusCode::kInvalidArgument);
  return 0;
}
