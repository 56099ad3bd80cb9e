// The route table: every endpoint is one row (method, path, error flavor, auth, handler), so HttpServer
// stays a small dispatcher and each API family lives in its own file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/server_context.h"
#include "server/sse_writer.h"

namespace ember::server {

// Fills `res` and returns nullopt, or returns the error for the dispatcher to render in the route's flavor.
using RouteHandler = std::function<std::optional<ApiError>(const httplib::Request&, httplib::Response&)>;

struct Route {
  std::string method;   // "GET", "POST" or "DELETE"
  std::string path;     // exact path, or with `prefix` the part before one more path segment
  ApiFlavor flavor = ApiFlavor::kOpenAI;
  bool needs_auth = true;
  RouteHandler handler;
  // The path is "<path><segment>" with a non-empty segment holding no '/' (/v1/responses/{id}).
  bool prefix = false;
  // With prefix: the rest may hold '/' too (/v1/models/{id}, where an id may be "org/repo:file").
  bool nested = false;
  // Shows or acts on every tenant (/stats, /metrics, /admin/*): AccessControl::Admin decides, not needs_auth.
  bool admin = false;
};
// Whether `route` serves `path`.
bool RouteMatches(const Route& route, const std::string& path);

std::vector<Route> OpenAIRoutes(ServerContext& ctx);     // /v1/chat/completions, /v1/completions, /v1/models
std::vector<Route> AnthropicRoutes(ServerContext& ctx);  // /v1/messages, /v1/messages/count_tokens
std::vector<Route> AdminRoutes(ServerContext& ctx);      // /health, /stats, /metrics, /admin/cache/flush
std::vector<Route> LlamaRoutes(ServerContext& ctx);      // llama-server's: /completion, /tokenize, /props, ...
std::vector<Route> ModelRoutes(ServerContext& ctx);      // /v1/models, /v1/models/{id}, llama-server's /models
// POST /v1/responses, GET and DELETE /v1/responses/{id}; owns the response store (response_store.h).
std::vector<Route> ResponsesRoutes(ServerContext& ctx);
// The browser UI (webui_assets.h): GET / (chat), /dashboard, /ui/<file>; no key needed (docs/webui.md).
std::vector<Route> WebUiRoutes(ServerContext& ctx);

// The request body as JSON; a 400 naming the parse error when it is not, or the depth limit when it
// nests deeper than kMaxJsonDepth (util/json_limited.h). Every route that takes a body parses it here.
ApiResult<nlohmann::json> ParseJsonBody(const httplib::Request& req);
void SetJson(httplib::Response& res, const nlohmann::json& body, int status = 200);
// GET /health and /v1/health: status, and the model (one) or the loaded models' names (several).
nlohmann::json HealthJson(ServerContext& ctx);
// One known model as /v1/models lists it with several models (ember's fields beside OpenAI's).
nlohmann::json ModelStatusJson(const ModelStatus& m, int64_t created);
// Answers with a server-sent-event stream that `stream` writes. httplib runs it on this worker after the
// handler has returned, outside Dispatch's catch, so an exception there is caught here: it ends only this
// response (the connection closes mid-stream) and is logged. `release` runs when the response is over,
// written or abandoned (the client left).
void StartEventStream(httplib::Response& res, std::function<void(SseWriter&)> stream, std::function<void()> release);

}  // namespace ember::server
