// Which model serves a request, as the routes ask it: the router's Acquire (model_router.h) with its
// failures turned into API errors (docs/server.md, "Several models").
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"
#include "server/model_router.h"
#include "server/server_context.h"

namespace ember::server {

// A lease on the model `name` selects (loaded on demand). Single-model mode: the one model, whatever the
// name. Otherwise: 404 (OpenAI code model_not_found, Anthropic not_found_error) naming the models served;
// 400 when no model is named and several are served, or the named one cannot run; 500 when its load
// failed (naming the file and why); 503 with Retry-After when the room it needs is held by models
// serving requests, or while shutting down; 507 when it does not fit even the whole memory budget.
ApiResult<ModelLease> AcquireModel(ServerContext& ctx, const std::string& name);

// The 404 for a model that is not served, with the router's message.
ApiError ModelNotFound(std::string message);

// The `model` field of a request body that has no parser of its own (llama-server's /tokenize,
// /detokenize): "" when absent or null, a 400 naming it when it is not a string.
ApiResult<std::string> ModelField(const nlohmann::json& body);

}  // namespace ember::server
