// Turns generated text into tool calls, for the two formats ember's models use:
//   Qwen3:     <tool_call>{"name": "f", "arguments": {...}}</tool_call> blocks, anywhere in the reply;
//   Llama 3.x: the whole reply is one JSON object {"name": "f", "parameters": {...}}, optionally after
//              <|python_tag|>.
// Text that does not parse as a call stays content: a model that fumbles the format produces a plain
// answer, never a server error. Call ids are left empty; the caller assigns them.
#pragma once

#include <string>
#include <vector>

#include "server/backend.h"

namespace ember::server {

struct ParsedReply {
  std::string content;            // the text outside any tool call, trimmed when calls were found
  std::vector<ToolCall> tool_calls;
};

ParsedReply ParseToolCalls(const std::string& text);

}  // namespace ember::server
