// The HTTP front door: binds, dispatches the route table, enforces auth, CORS and the body limit, shapes
// every error (including httplib's own 404/413) as JSON in the route's API flavor, counts requests.
//
// Threads: one listener thread (accept loop), a pool of `http_threads` connection workers (parse,
// validate, template, tokenize, stream), and the Scheduler's single generation lane. See docs/server.md.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "server/routes.h"
#include "server/serve_options.h"
#include "server/server_context.h"

namespace httplib {
class Server;
}

namespace ember::server {

class HttpServer {
 public:
  // `backend` must outlive the server.
  HttpServer(const ServeOptions& options, InferenceBackend* backend, Clock clock = SystemClock());
  ~HttpServer();  // Shutdown() if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds options.host:options.port (0 = any free port) and serves on background threads.
  Status Start();
  int port() const { return port_; }
  // Stops admitting work, gives in-flight generations options.shutdown_timeout_s, cancels the rest,
  // closes the listener, then flushes the backend's cache. Idempotent.
  Status Shutdown();

  ServerContext& context() { return ctx_; }

 private:
  void DefineMetrics();
  void Dispatch(const Route& route, const httplib::Request& req, httplib::Response& res);
  void InstallHooks();
  void InstallCors();
  void InstallErrorShaping();

  ServeOptions options_;
  InferenceBackend* backend_;
  MetricsRegistry metrics_;
  AccessControl access_;
  Scheduler scheduler_;
  ServerContext ctx_;
  std::vector<Route> routes_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = -1;
  bool stopped_ = false;
};

}  // namespace ember::server
