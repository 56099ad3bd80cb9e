// Placeholder until forced tool calls land (issue #17, helper `tools`).
#include "server/tool_grammar.h"

namespace ember::server {

ApiResult<std::string> ToolCallGrammar(ServerContext&, const CompletionRequest&) {
  return ApiError{501, "not_implemented_error", "forced tool calls are not implemented yet", "tool_choice"};
}

}  // namespace ember::server
