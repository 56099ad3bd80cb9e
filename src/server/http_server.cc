#include "server/http_server.h"

#include <csignal>

#include <httplib.h>

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
  res.set_content(DumpJson(ErrorBody(err, flavor)), "application/json");
}

}  // namespace

HttpServer::HttpServer(const ServeOptions& options, InferenceBackend* backend, Clock clock)
    : options_(options),
      backend_(backend),
      access_(options.api_keys, options.cors_origins),
      scheduler_(backend, options.max_queue),
      http_(std::make_unique<httplib::Server>()) {
  ctx_.options = options_;
  ctx_.backend = backend_;
  ctx_.scheduler = &scheduler_;
  ctx_.metrics = &metrics_;
  ctx_.access = &access_;
  ctx_.clock = std::move(clock);
  ctx_.started_at = ctx_.clock.steady_seconds();
  ctx_.model_id = options_.model_alias.empty() ? backend_->model_id() : options_.model_alias;
  DefineMetrics();
  for (auto* family : {&OpenAIRoutes, &AnthropicRoutes, &AdminRoutes}) {
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
  metrics_.DefineCounter("ember_cached_prompt_tokens_total", "prompt tokens served from the prefix cache, by tier");
  metrics_.DefineCounter("ember_cancelled_generations_total", "generations cut short by a client disconnect or shutdown");
  metrics_.DefineGauge("ember_queue_waiting", "generations waiting for the lane");
  metrics_.DefineGauge("ember_queue_running", "generations running");
  metrics_.DefineGauge("ember_queue_rejected", "generations refused because the queue was full (429)");
  metrics_.DefineGauge("ember_uptime_seconds", "seconds since the server started");
}

void HttpServer::Dispatch(const Route& route, const httplib::Request& req, httplib::Response& res) {
  try {
    if (route.needs_auth &&
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

void HttpServer::InstallHooks() {
  for (const Route& route : routes_) {
    auto handler = [this, &route](const httplib::Request& q, httplib::Response& s) { Dispatch(route, q, s); };
    if (route.method == "GET") http_->Get(route.path, handler);
    else http_->Post(route.path, handler);
  }
  InstallCors();
  InstallErrorShaping();
  const size_t threads = static_cast<size_t>(std::max(2, options_.http_threads));
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_max_count(1000);
  http_->set_keep_alive_timeout(2);  // bounds how long an idle keep-alive connection delays shutdown
}

// Pre-routing: notes the start time and answers CORS (headers for allowed origins, OPTIONS preflight).
void HttpServer::InstallCors() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request_start = ctx_.clock.steady_seconds();
    const std::string origin = req.get_header_value("Origin");
    const bool allowed = access_.OriginAllowed(origin);
    if (allowed) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    if (req.method != "OPTIONS") return httplib::Server::HandlerResponse::Unhandled;
    if (!allowed) {
      RenderError(res, {403, "permission_error", "CORS origin '" + origin + "' is not allowed (see --cors-origin)", ""},
                  FlavorForPath(req.path));
      return httplib::Server::HandlerResponse::Handled;
    }
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers",
                   asked.empty() ? "Authorization, Content-Type, x-api-key, anthropic-version" : asked);
    res.set_header("Access-Control-Max-Age", "600");
    return httplib::Server::HandlerResponse::Handled;
  });
}

// httplib's own failures (unknown route, body over the limit, malformed request) arrive at the error
// handler bodiless and get the JSON error shape; the logger counts every request by route and status.
void HttpServer::InstallErrorShaping() {
  http_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                        httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    ApiError err;
    if (res.status == 404) err = NotFoundError("no route for " + req.method + " " + req.path);
    else if (res.status == 413) err = TooLarge("request body exceeds the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
    else err = {res.status, "invalid_request_error", "malformed HTTP request", ""};
    RenderError(res, err, FlavorForPath(req.path));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    bool known = false;
    for (const Route& r : routes_) known |= r.path == req.path;
    const std::string route = known ? req.path : "other";
    metrics_.Add("ember_http_requests_total", {{"route", route}, {"status", std::to_string(res.status)}});
    if (t_request_start >= 0) {
      metrics_.Observe("ember_http_request_duration_seconds", {{"route", route}}, ctx_.clock.steady_seconds() - t_request_start);
    }
    t_request_start = -1;
  });
}

Status HttpServer::Start() {
  // A client that vanishes mid-write must not kill the process with SIGPIPE; write() returns EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return IoError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                   " (address in use or not available)");
  }
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return Status::Ok();
}

Status HttpServer::Shutdown() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  ctx_.draining.store(true);
  scheduler_.Shutdown(std::chrono::milliseconds(static_cast<int64_t>(options_.shutdown_timeout_s * 1000)));
  http_->stop();
  if (listener_.joinable()) listener_.join();
  return backend_->FlushCache();
}

}  // namespace ember::server
