// What every route handler shares: the served models, metrics and configuration. Owned by HttpServer;
// handlers get a reference. All members are thread-safe or immutable after start. A handler reaches a
// model's backend and scheduler only through a lease (AcquireModel, model_select.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "server/access_control.h"
#include "server/backend.h"
#include "server/metrics.h"
#include "server/model_router.h"
#include "server/serve_options.h"
#include "util/env.h"

namespace ember::server {

struct ServerContext {
  ServeOptions options;
  ModelRouter* models = nullptr;         // one model (single-model mode) or several
  MetricsRegistry* metrics = nullptr;
  const AccessControl* access = nullptr;
  // Time comes from the Env (tests pass a simulated one): monotonic seconds for durations and uptime,
  // wall seconds for `created`.
  Env* env = Env::Default();
  double started_at = 0;
  std::string model_id;                 // single-model mode: the id clients see ("" with several models)
  std::atomic<uint64_t> next_id{1};
  std::atomic<bool> draining{false};    // shutdown began: new work gets 503
  // True when the client of the request the calling connection worker is handling has closed its
  // connection (HttpServer installs the transport's probe; null in tests without a transport). Lets
  // work that writes nothing for a while (non-streaming generation, schema compilation) stop early.
  std::function<bool()> client_gone;
  // Sets the connection gauges (open, busy, refused, evicted, timed out) before /metrics renders.
  std::function<void()> refresh_connection_metrics;

  bool ClientGone() const { return client_gone && client_gone(); }

  std::string NewId(const char* prefix) { return prefix + std::to_string(next_id.fetch_add(1)); }
  double SteadySeconds() const { return static_cast<double>(env->MonotonicMicros()) / 1e6; }
  int64_t UnixSeconds() const { return env->WallMicros() / 1'000'000; }
};

}  // namespace ember::server
