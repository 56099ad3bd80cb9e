// The grammar of a forced tool call (tool_choice "required" or a named function; Anthropic any / tool):
// the model family's own call syntax (Llama 3.x JSON, Qwen / Hermes <tool_call> blocks), with each
// tool's arguments constrained by its `parameters` schema, one call or several (parallel_tool_calls).
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/server_context.h"

namespace ember::server {

// GBNF text for grammar::ParseGbnf. 400 when the named tool is not offered or a schema is unsupported.
ApiResult<std::string> ToolCallGrammar(ServerContext& ctx, const CompletionRequest& req);

}  // namespace ember::server
