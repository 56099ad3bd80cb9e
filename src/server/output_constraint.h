// The grammar a request's output must follow, from whichever field asked for one: a forced tool call
// (tool_choice required / a named function; tool_grammar.h), response_format json_schema or json_object
// (grammar/json_schema.h), or a raw GBNF `grammar`. Asking for two at once is a 400, and so is a schema
// or grammar the compiler refuses (its message names the unsupported feature). HTTP thread.
#pragma once

#include <functional>
#include <memory>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/backend.h"

namespace ember::server {

// null when the request constrains nothing. `backend`: the model that will run it (its tool-call syntax).
// Schema compilation runs within grammar::CompileLimits (bytes, rules, time: a 400 naming the limit) and
// polls `client_gone` every few milliseconds: when it says the client left, compilation stops and the
// result is a 499 no one reads.
ApiResult<std::shared_ptr<const grammar::Grammar>> BuildOutputGrammar(const InferenceBackend& backend,
                                                                      const CompletionRequest& req,
                                                                      const std::function<bool()>& client_gone = {});

}  // namespace ember::server
