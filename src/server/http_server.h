// The HTTP front door: binds, dispatches the route table, enforces auth, CORS, the Host check and the
// transport limits (body cap after decoding, JSON content type, request deadline; http_transport.h),
// shapes every error (including httplib's own 404/413) as JSON in the route's API flavor, counts requests.
//
// Threads: the connection loop (epoll: accepts and reads requests whole), a pool of HttpWorkerThreads()
// workers (parse, validate, template, tokenize, stream), and each loaded model's Scheduler lanes
// (model_router.h). See docs/server.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "server/routes.h"
#include "server/serve_options.h"
#include "server/server_context.h"

namespace ember::server {

class TransportServer;
struct BodyFraming;

class HttpServer {
 public:
  // One model: `backend` serves every request whatever its `model` names. It must outlive the server,
  // and so must `env` (its clocks: request deadlines, uptime, `created`, latencies; null: Env::Default()).
  HttpServer(const ServeOptions& options, InferenceBackend* backend, Env* env = nullptr);
  // Several models (ModelRouter with a loader): a request's `model` picks one. `models` must outlive
  // the server; Shutdown drains and flushes it.
  HttpServer(const ServeOptions& options, ModelRouter* models, Env* env = nullptr);
  ~HttpServer();  // Shutdown() if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds options.host:options.port (0 = any free port) and serves on background threads.
  Status Start();
  int port() const { return port_; }
  // Stops admitting work, gives in-flight generations options.shutdown_timeout_s, cancels the rest,
  // closes the listener, then flushes every loaded model's cache. Idempotent.
  Status Shutdown();

  ServerContext& context() { return ctx_; }

 private:
  HttpServer(const ServeOptions& options, std::unique_ptr<ModelRouter> own, ModelRouter* models, Env* env);
  void DefineMetrics();
  void Dispatch(const Route& route, const httplib::Request& req, httplib::Response& res);
  const Route* FindRoute(const std::string& method, const std::string& path) const;
  // The methods `path` is served with ("GET", "POST"), "" when it is no route: a 405 names them.
  std::string AllowedMethods(const std::string& path) const;
  // Why an admin route (Route::admin) refuses this caller: 401 or 403 naming what it needs; nullopt: allowed.
  std::optional<ApiError> AdminRefusal(const httplib::Request& req) const;
  // What can be refused from the request line and headers alone, before a body byte is read.
  std::optional<ApiError> Refusal(const httplib::Request& req, BodyFraming* framing) const;
  // Pre-routing: timing, CORS headers and preflights, Refusal. True when the request was answered.
  bool Screen(const httplib::Request& req, httplib::Response& res);
  // A POST body, decoded and capped at max_body_bytes; empty when the request frames none.
  std::optional<ApiError> ReadBody(const httplib::Request& req, const httplib::ContentReader& read,
                                   std::string* body) const;
  void InstallHooks();
  void InstallErrorShaping();

  ServeOptions options_;
  std::unique_ptr<ModelRouter> own_models_;  // single-model mode's router
  ModelRouter* models_;
  MetricsRegistry metrics_;
  AccessControl access_;
  HostAllowlist hosts_;
  ServerContext ctx_;
  std::vector<Route> routes_;
  std::unique_ptr<TransportServer> http_;
  int port_ = -1;
  bool stopped_ = false;
};

}  // namespace ember::server
