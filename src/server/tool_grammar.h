// The grammar of a forced tool call (tool_choice "required" or a named function; Anthropic any / tool):
// the model family's own call syntax (tool_call_syntax.h), with each tool's arguments constrained by its
// `parameters` schema (grammar/json_schema.h), one call or several (parallel_tool_calls).
//   kLlama3Json: {"name": "f", "parameters": ARGS}                       exactly one call
//   kHermes:     <tool_call>\n{"name": "f", "arguments": ARGS}\n</tool_call>, joined by "\n" when
//                parallel_tool_calls (one or more), else exactly one
// The layout is the one the family's template renders calls in (so the model sees it in its history);
// ARGS may carry the compiler's bounded insignificant whitespace.
#pragma once

#include <string>

#include "grammar/compile_budget.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/tool_call_syntax.h"

namespace ember::server {

// GBNF text for grammar::ParseGbnf, root rule "root". `req` must force a call (kRequired: any of its
// tools; kFunction: tool_choice_name). 400 naming the tool and the field when a tool's schema is not an
// object schema or uses what the compiler cannot enforce (its message names the keyword).
// `budget` (null: a default one) is shared by all the tools' schemas, so many tools cannot each spend
// a whole budget.
ApiResult<std::string> ToolCallGbnf(ToolCallSyntax syntax, const CompletionRequest& req,
                                    grammar::CompileBudget* budget = nullptr);

}  // namespace ember::server
