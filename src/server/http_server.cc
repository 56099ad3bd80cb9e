#include "server/http_server.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <httplib.h>

#include "server/http_transport.h"
#include "server/llama_metrics.h"
#include "server/sse_writer.h"

namespace ember::server {
namespace {

// When the current request started (steady seconds), per connection worker: httplib hands the same
// thread the whole request, from routing to the logger.
thread_local double t_request_start = -1;

ApiFlavor FlavorForPath(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0 ? ApiFlavor::kAnthropic : ApiFlavor::kOpenAI;
}

void RenderError(httplib::Response& res, const ApiError& err, ApiFlavor flavor) {
  res.status = err.http_status;
  if (err.retry_after_s > 0) res.set_header("Retry-After", std::to_string(err.retry_after_s));
  res.set_content(DumpJson(ErrorBody(err, flavor)), "application/json");
}

TransportLimits LimitsFor(const ServeOptions& o, Env* env) {
  TransportLimits l;
  l.env = env;
  l.request_timeout_s = o.request_timeout_s;
  l.header_timeout_s = o.header_timeout_s;
  l.idle_timeout_s = o.keep_alive_timeout_s;
  l.max_connections = o.max_connections;
  l.max_connections_per_client = o.max_client_connections;
  l.max_body_bytes = o.max_body_bytes;
  l.workers = static_cast<size_t>(std::max(2, HttpWorkerThreads(o)));
  // The cap is on decoded bytes (ReadBody); this wire budget only bounds what malformed chunk framing
  // could make httplib buffer. Compressed or sanely chunked bodies are far below it.
  l.max_raw_body_bytes = 2 * o.max_body_bytes + l.max_header_bytes;
  return l;
}

// The Content-Encodings httplib decodes (Debian builds it with zlib and brotli). Any other would reach
// the JSON parser still encoded.
bool DecodableEncoding(const std::string& e) {
  return e.empty() || e == "identity" || e == "gzip" || e == "deflate" || e == "br";
}

std::string Quoted(const std::string& s) {
  std::string out = "'";
  out.append(s, 0, 100);
  return out += "'";
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", s);
  return text;
}

ApiError TooSlow(const ServeOptions& o, const char* what) {
  return {408, "invalid_request_error",
          std::string(what) + " not received within --request-timeout (" + Seconds(o.request_timeout_s) + ")", ""};
}

// The loop holds more request bytes than --max-body-bytes allows for all requests arriving at once.
ApiError BuffersFull() {
  ApiError e = Overloaded("the server is receiving too many request bodies at once; retry shortly");
  e.retry_after_s = 1;
  return e;
}

}  // namespace

bool RouteMatches(const Route& route, const std::string& path) {
  if (!route.prefix) return route.path == path;
  return path.size() > route.path.size() && path.compare(0, route.path.size(), route.path) == 0 &&
         (route.nested || path.find('/', route.path.size()) == std::string::npos);
}

HttpServer::HttpServer(const ServeOptions& options, InferenceBackend* backend, Env* env)
    : HttpServer(options,
                 std::make_unique<ModelRouter>(backend, options.model_alias.empty() ? backend->model_id()
                                                                                     : options.model_alias,
                                               options.max_queue, env != nullptr ? env : Env::Default()),
                 nullptr, env) {}

HttpServer::HttpServer(const ServeOptions& options, ModelRouter* models, Env* env)
    : HttpServer(options, nullptr, models, env) {}

HttpServer::HttpServer(const ServeOptions& options, std::unique_ptr<ModelRouter> own, ModelRouter* models, Env* env)
    : options_(options),
      own_models_(std::move(own)),
      models_(own_models_ ? own_models_.get() : models),
      access_(options.api_keys, options.cors_origins, options.admin_key),
      hosts_(IsLoopbackBindAddress(options.host) || !options.allowed_hosts.empty(), options.allowed_hosts),
      http_(std::make_unique<TransportServer>(LimitsFor(options, env != nullptr ? env : Env::Default()))) {
  ctx_.options = options_;
  ctx_.models = models_;
  ctx_.metrics = &metrics_;
  ctx_.access = &access_;
  ctx_.env = env != nullptr ? env : Env::Default();
  ctx_.started_at = ctx_.SteadySeconds();
  ctx_.client_gone = [] { return TransportServer::ClientGone(); };
  ctx_.refresh_connection_metrics = [this] {
    const LoopCounts c = http_->counts();
    metrics_.Set("ember_http_connections", {{"state", "open"}}, static_cast<double>(c.open));
    metrics_.Set("ember_http_connections", {{"state", "answering"}}, static_cast<double>(c.busy));
    metrics_.Set("ember_http_connections_closed_total", {{"reason", "refused"}}, static_cast<double>(c.refused));
    metrics_.Set("ember_http_connections_closed_total", {{"reason", "evicted"}}, static_cast<double>(c.evicted));
    metrics_.Set("ember_http_connections_closed_total", {{"reason", "deadline"}}, static_cast<double>(c.timed_out));
  };
  if (!models_->multi()) ctx_.model_id = models_->RunnableNames().at(0);
  DefineMetrics();
  for (auto* family : {&OpenAIRoutes, &ModelRoutes, &ResponsesRoutes, &AnthropicRoutes, &AdminRoutes, &LlamaRoutes,
                       &WebUiRoutes}) {
    for (Route& r : (*family)(ctx_)) routes_.push_back(std::move(r));
  }
  InstallHooks();
}

HttpServer::~HttpServer() { (void)Shutdown(); }

void HttpServer::DefineMetrics() {
  const std::vector<double> latency = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  metrics_.DefineCounter("ember_http_requests_total", "HTTP requests by route and status");
  metrics_.DefineHistogram("ember_http_request_duration_seconds", "request latency to the last byte", latency);
  metrics_.DefineHistogram("ember_time_to_first_token_seconds", "time from admission to the first reply text", latency);
  metrics_.DefineCounter("ember_prompt_tokens_total", "prompt tokens of finished generations");
  metrics_.DefineCounter("ember_completion_tokens_total", "generated tokens");
  metrics_.DefineCounter("ember_generated_tokens_total",
                         "generated tokens as they reach the connection, generations still running included");
  metrics_.DefineCounter("ember_cached_prompt_tokens_total", "prompt tokens served from the prefix cache, by tier");
  metrics_.DefineCounter("ember_cancelled_generations_total", "generations cut short by a client disconnect or shutdown");
  metrics_.DefineGauge("ember_queue_waiting", "generations waiting for a lane (those waiting for memory included)");
  metrics_.DefineGauge("ember_queue_running", "generations running (lanes busy)");
  metrics_.DefineGauge("ember_queue_rejected", "generations refused because the queue was full (429)");
  metrics_.DefineGauge("ember_queue_waiting_for_memory", "queued generations a free lane could run but the KV budget does not admit yet");
  metrics_.DefineCounter("ember_queue_admission_waits_total", "generations that had to wait for memory before running");
  metrics_.DefineGauge("ember_queue_lanes", "generation lanes (--parallel)");
  metrics_.DefineGauge("ember_lane_busy", "1 while the lane runs a generation");
  metrics_.DefineCounter("ember_lane_completed_total", "generations the lane ran to their end");
  metrics_.DefineGauge("ember_uptime_seconds", "seconds since the server started");
  metrics_.DefineGauge("ember_http_connections", "client connections now: open (all), answering (held by a worker)");
  metrics_.DefineCounter("ember_http_connections_closed_total",
                         "connections the server closed: refused (no room), evicted (to make room), deadline "
                         "(head, request or idle timeout)");
  DefineLlamaMetrics(metrics_);
  if (!models_->multi()) return;
  metrics_.DefineGauge("ember_models_known", "models this server can serve");
  metrics_.DefineGauge("ember_models_loaded", "models loaded now");
  metrics_.DefineGauge("ember_model_loaded", "1 while the model is loaded");
  metrics_.DefineCounter("ember_model_loads_total", "model loads that succeeded");
  metrics_.DefineCounter("ember_model_load_failures_total", "model loads that failed");
  metrics_.DefineCounter("ember_model_unloads_total", "models unloaded, by reason (lru: to make room; idle)");
  metrics_.DefineCounter("ember_model_loads_refused_total", "loads refused because the room was held by models in use");
  metrics_.DefineGauge("ember_memory_budget_bytes", "the memory budget of the loaded models (0: none)");
  metrics_.DefineGauge("ember_memory_charged_bytes", "weights and KV budgets of the loaded models");
}

void HttpServer::Dispatch(const Route& route, const httplib::Request& req, httplib::Response& res) {
  try {
    if (route.admin) {
      if (std::optional<ApiError> refused = AdminRefusal(req)) return RenderError(res, *refused, route.flavor);
    } else if (route.needs_auth &&
               !access_.Authorized(req.get_header_value("Authorization"), req.get_header_value("x-api-key"))) {
      return RenderError(res, AuthenticationError("invalid or missing API key (send Authorization: Bearer <key> or x-api-key)"),
                         route.flavor);
    }
    if (std::optional<ApiError> err = route.handler(req, res)) RenderError(res, *err, route.flavor);
  } catch (const std::exception& e) {
    // Last line of defence: nothing a client sends may take the process down.
    RenderError(res, {500, "api_error", std::string("internal error: ") + e.what(), ""}, route.flavor);
  }
}

std::optional<ApiError> HttpServer::AdminRefusal(const httplib::Request& req) const {
  const std::string what = req.path + " shows or acts on every API key's traffic";
  switch (access_.Admin(req.get_header_value("Authorization"), req.get_header_value("x-api-key"))) {
    case AdminAccess::kAllowed: return std::nullopt;
    case AdminAccess::kNoCredentials:
      return AuthenticationError(access_.admin_key_set()
                                     ? "invalid or missing admin key: " + what + " (send the --admin-key as Authorization: Bearer <key> or x-api-key)"
                                     : "invalid or missing API key (send Authorization: Bearer <key> or x-api-key)");
    case AdminAccess::kNotAdmin:
      return ApiError{403, "permission_error", what + ": it needs the admin key (--admin-key), not an API key", ""};
    case AdminAccess::kNoAdminKey:
      return ApiError{403, "permission_error",
                      what + ": with several API keys it answers only the admin key, and this server has none "
                             "(start it with --admin-key)", ""};
  }
  return AuthenticationError("invalid or missing admin key");
}

std::string HttpServer::AllowedMethods(const std::string& path) const {
  std::string methods;
  for (const Route& r : routes_) {
    if (r.path == path) methods += (methods.empty() ? "" : ", ") + r.method;
  }
  return methods;
}

const Route* HttpServer::FindRoute(const std::string& method, const std::string& path) const {
  for (const Route& r : routes_) {
    if (RouteMatches(r, path) && r.method == method) return &r;
  }
  return nullptr;
}

std::optional<ApiError> HttpServer::Refusal(const httplib::Request& req, BodyFraming* framing) const {
  const std::string host = req.get_header_value("Host");
  if (!hosts_.Allowed(host)) {
    return ApiError{403, "permission_error",
                    "Host " + Quoted(host) + " is not served: a loopback server answers only loopback names " +
                        "(DNS rebinding protection); add the name with --allowed-host", ""};
  }
  if (std::optional<FramingError> e = ParseBodyFraming(req, framing)) {
    return ApiError{e->http_status, "invalid_request_error", e->message, ""};
  }
  if (req.method == "OPTIONS") return std::nullopt;  // a CORS preflight, answered by Screen
  const Route* route = FindRoute(req.method == "HEAD" ? "GET" : req.method, req.path);
  if (route == nullptr && !AllowedMethods(req.path).empty()) {
    return ApiError{405, "invalid_request_error",
                    req.method + " " + req.path + " is not allowed; use " + AllowedMethods(req.path), ""};
  }
  if (route == nullptr) return NotFoundError("no route for " + req.method + " " + req.path);
  if (!framing->has_body || route->method != "POST") return std::nullopt;
  if (framing->content_length > options_.max_body_bytes) {
    return TooLarge("request body exceeds the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
  }
  const std::string type = req.get_header_value("Content-Type");
  if (!IsJsonMediaType(type)) {
    // Also the CSRF guard: a page may POST text/plain, forms or multipart anywhere without a preflight.
    return ApiError{415, "invalid_request_error", "Content-Type must be application/json, not " + Quoted(type), ""};
  }
  const std::string encoding = req.get_header_value("Content-Encoding");
  if (!DecodableEncoding(encoding)) {
    return ApiError{415, "invalid_request_error",
                    "Content-Encoding " + Quoted(encoding) + " is not supported (gzip, deflate, br or none)", ""};
  }
  return std::nullopt;
}

bool HttpServer::Screen(const httplib::Request& req, httplib::Response& res) {
  t_request_start = ctx_.SteadySeconds();
  const std::string origin = req.get_header_value("Origin");
  const bool allowed = access_.OriginAllowed(origin);
  if (allowed) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }
  BodyFraming framing;
  const std::optional<ApiError> refusal = Refusal(req, &framing);
  // A body ember does not read would be parsed as the next request: this connection ends here.
  if (refusal || (framing.has_body && req.method != "POST")) TransportServer::CloseAfterResponse();
  if (refusal) {
    RenderError(res, *refusal, FlavorForPath(req.path));
    if (refusal->http_status == 405) res.set_header("Allow", AllowedMethods(req.path));
    return true;
  }
  if (req.method != "OPTIONS") return false;
  if (!allowed) {
    RenderError(res, {403, "permission_error", "CORS origin '" + origin + "' is not allowed (see --cors-origin)", ""},
                FlavorForPath(req.path));
    return true;
  }
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers",
                 asked.empty() ? "Authorization, Content-Type, x-api-key, anthropic-version" : asked);
  res.set_header("Access-Control-Max-Age", "600");
  return true;
}

std::optional<ApiError> HttpServer::ReadBody(const httplib::Request& req, const httplib::ContentReader& read,
                                             std::string* body) const {
  BodyFraming framing;
  if (ParseBodyFraming(req, &framing) || !framing.has_body) return std::nullopt;  // Screen refused bad framing
  const BodyRead result = ReadCappedBody(read, options_.max_body_bytes, body);
  if (result == BodyRead::kOk) return std::nullopt;
  TransportServer::CloseAfterResponse();  // the rest of the body is never read
  const ReadFailure failure = TransportServer::CurrentReadFailure();
  if (result == BodyRead::kTooLarge) {
    return TooLarge("request body exceeds the limit of " + std::to_string(options_.max_body_bytes) +
                    " bytes (counted after chunked and Content-Encoding decoding)");
  }
  if (failure == ReadFailure::kBodyLimit) {
    return TooLarge("request body exceeds " + std::to_string(LimitsFor(options_, ctx_.env).max_raw_body_bytes) +
                    " bytes on the wire (chunk framing included)");
  }
  if (failure == ReadFailure::kDeadline) return TooSlow(options_, "request body");
  if (failure == ReadFailure::kOverloaded) return BuffersFull();
  return InvalidRequest("request body could not be read: truncated, bad chunked framing, or bad gzip/deflate/br "
                        "data");
}

void HttpServer::InstallHooks() {
  for (const Route& route : routes_) {
    // httplib matches a pattern as a regex: a prefix route takes one more segment (route paths hold no
    // regex metacharacters).
    const std::string pattern = route.prefix ? route.path + (route.nested ? ".+" : "[^/]+") : route.path;
    if (route.method == "GET" || route.method == "DELETE") {
      auto handler = [this, &route](const httplib::Request& q, httplib::Response& s) { Dispatch(route, q, s); };
      if (route.method == "GET") {
        http_->Get(pattern, handler);
      } else {
        http_->Delete(pattern, handler);
      }
      continue;
    }
    // Bodies are read here rather than by httplib, so the cap holds on the decoded bytes as they arrive.
    http_->Post(pattern, [this, &route](const httplib::Request& q, httplib::Response& s,
                                           const httplib::ContentReader& read) {
      httplib::Request with_body = q;
      std::optional<ApiError> err = ReadBody(q, read, &with_body.body);
      if (err) return RenderError(s, *err, route.flavor);
      Dispatch(route, with_body, s);
    });
  }
  http_->set_pre_routing_handler([this](const httplib::Request& q, httplib::Response& s) {
    return Screen(q, s) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  // `Expect: 100-continue` (curl, for large bodies) gets the refusal instead of an invitation to send.
  http_->set_expect_100_continue_handler([this](const httplib::Request& q, httplib::Response& s) {
    BodyFraming framing;
    const std::optional<ApiError> refusal = Refusal(q, &framing);
    if (!refusal) return 100;
    TransportServer::CloseAfterResponse();
    RenderError(s, *refusal, FlavorForPath(q.path));
    return s.status;
  });
  InstallErrorShaping();
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_max_count(1000);
}

// httplib's own failures (unknown route, body over the limit, malformed request) arrive at the error
// handler bodiless and get the JSON error shape; the logger counts every request by route and status.
void HttpServer::InstallErrorShaping() {
  http_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                        httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    ApiError err;
    const ReadFailure failure = TransportServer::CurrentReadFailure();
    if (failure == ReadFailure::kDeadline) {
      err = TooSlow(options_, "request headers");
    } else if (failure == ReadFailure::kOverloaded) {
      err = BuffersFull();
    } else if (failure == ReadFailure::kHeaderLimit) {
      err = {431, "invalid_request_error",
             "request line and headers exceed " + std::to_string(TransportLimits{}.max_header_bytes) + " bytes", ""};
    } else if (res.status == 404) {
      err = NotFoundError("no route for " + req.method + " " + req.path);
    } else if (res.status == 413) {
      err = TooLarge("request body exceeds the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
    } else if (res.status == 414) {
      err = {414, "invalid_request_error", "request URI exceeds 8192 bytes", ""};
    } else {
      err = {res.status, "invalid_request_error", "malformed HTTP request", ""};
    }
    RenderError(res, err, FlavorForPath(req.path));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    // A prefix route counts under its pattern, so ids never become metric labels.
    std::string route = "other";
    for (const Route& r : routes_) {
      if (RouteMatches(r, req.path)) route = r.prefix ? r.path + "{id}" : r.path;
    }
    metrics_.Add("ember_http_requests_total", {{"route", route}, {"status", std::to_string(res.status)}});
    if (t_request_start >= 0) {
      metrics_.Observe("ember_http_request_duration_seconds", {{"route", route}}, ctx_.SteadySeconds() - t_request_start);
    }
    t_request_start = -1;
  });
}

Status HttpServer::Start() {
  // A client that vanishes mid-write must not kill the process with SIGPIPE; write() returns EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  port_ = http_->Bind(options_.host, options_.port);
  if (port_ <= 0) {
    return IoError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                   " (address in use or not available)");
  }
  return http_->Serve();
}

Status HttpServer::Shutdown() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  ctx_.draining.store(true);
  models_->Drain(std::chrono::milliseconds(static_cast<int64_t>(options_.shutdown_timeout_s * 1000)));
  http_->Stop();
  return models_->FlushAll();
}

}  // namespace ember::server
