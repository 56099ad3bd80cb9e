// Operational endpoints: /health, /stats, /metrics, /admin/cache/flush (llama-server's /tokenize,
// /detokenize, /apply-template are in llama_routes.cc). Also SetJson and StartEventStream of routes.h (ParseJsonBody lives in json_input.cc).
#include <cstdio>

#include "server/completion_flow.h"
#include "server/llama_metrics.h"
#include "server/request_fields.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace ember::server {

using nlohmann::json;

void SetJson(httplib::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(DumpJson(body), "application/json");
}

void StartEventStream(httplib::Response& res, std::function<void(SseWriter&)> stream, std::function<void()> release) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream = std::move(stream)](size_t, httplib::DataSink& sink) {
        SseWriter w([&sink](std::string_view b) { return sink.write(b.data(), b.size()); });
        try {
          stream(w);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "ember serve: a stream failed: %s\n", e.what());
          return false;
        }
        if (w.ok()) sink.done();
        return w.ok();
      },
      [release = std::move(release)](bool) { release(); });
}

json HealthJson(ServerContext& ctx) {
  json out = {{"status", ctx.draining.load() ? "shutting_down" : "ok"}};
  if (!ctx.models->multi()) {
    out["model"] = ctx.model_id;
    return out;
  }
  json loaded = json::array();
  for (const ModelStatus& m : ctx.models->List()) {
    if (m.state == ModelState::kLoaded) loaded.push_back(m.spec.name);
  }
  out["models_loaded"] = std::move(loaded);
  return out;
}

namespace {

json ValuesJson(const std::vector<StatValue>& values) {
  json out = json::object();
  for (const StatValue& v : values) out[v.name] = v.value;
  return out;
}

// One entry per scheduler lane: its state, and what the backend reports for it (requests, cache hits).
json LanesJson(const Scheduler::Stats& q, const BackendStats& b) {
  json lanes = json::array();
  for (const Scheduler::LaneState& l : q.lane_states) {
    json lane = {{"lane", l.lane}, {"state", l.busy ? "running" : "idle"}, {"completed", l.completed}};
    for (const LaneStats& bl : b.lanes) {
      if (bl.lane == l.lane) lane.update(ValuesJson(LaneValues(bl)));
    }
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

// Token totals of the server's life, for rates from deltas (the dashboard's throughput). The first three
// count finished generations; `generated` counts tokens as they stream, running generations included.
json TokensJson(const MetricsRegistry& m) {
  auto total = [&m](const char* name) { return static_cast<uint64_t>(m.Total(name)); };  // whole counts
  return {{"prompt", total("ember_prompt_tokens_total")},
          {"cached", total("ember_cached_prompt_tokens_total")},
          {"completion", total("ember_completion_tokens_total")},
          {"generated", total("ember_generated_tokens_total")}};
}

// One model's engine, cache tiers, queue, batch values and lanes: /stats' top level with one model, each
// loaded entry of its `models` array with several.
json ModelStatsJson(const ServedModel& m) {
  const BackendStats b = m.backend->Stats();
  const Scheduler::Stats q = m.scheduler->stats();
  json tiers = json::object();
  for (const CacheTierStats& t : b.cache_tiers) {
    json tier = ValuesJson(t.values);
    for (const HistogramValue& h : t.histograms) {
      tier[h.name] = {{"count", h.count}, {"sum", h.sum}, {"upper_bounds", h.upper_bounds},
                      {"cumulative_counts", h.cumulative_counts}};
    }
    tiers[t.tier] = std::move(tier);
  }
  return json{{"engine", {{"name", b.engine}, {"context_length", m.backend->context_length()}, {"values", ValuesJson(b.engine_values)}}},
              {"cache", {{"tiers", std::move(tiers)}}},
              {"queue", {{"waiting", q.queued}, {"running", q.running}, {"completed", q.completed},
                         {"rejected", q.rejected}, {"max_waiting", q.max_queue}, {"lanes", q.lanes},
                         {"waiting_for_memory", q.waiting_for_memory}, {"admission_waits", q.admission_waits}}},
              {"batch", {{"values", ValuesJson(b.batch_values)}}},
              {"lanes", LanesJson(q, b)}};
}

// With several models: every known model (docs/server.md, "Several models"), the loaded ones with their
// ModelStatsJson, and the router's counters and memory.
json MultiStatsJson(ServerContext& ctx) {
  const std::vector<ModelStatus> known = ctx.models->List();  // before the leases below count as holders
  std::vector<ModelLease> loaded = ctx.models->LeaseLoaded();
  json models = json::array();
  for (const ModelStatus& m : known) {
    json entry = ModelStatusJson(m, ctx.UnixSeconds());
    entry["name"] = m.spec.name;  // (= id: the dashboard's key)
    entry["path"] = m.spec.path;
    entry["leases"] = m.leases;
    entry["idle_s"] = m.idle_s;
    entry["memory_bytes"] = m.charged_bytes;
    entry["kv_budget_bytes"] = m.kv_budget_bytes;
    entry["loads"] = m.loads;
    entry["unloads"] = m.unloads;
    entry["load_failures"] = m.load_failures;
    entry["last_load_s"] = m.last_load_s;
    for (const ModelLease& lease : loaded) {
      if (lease.id() == m.spec.name) entry.update(ModelStatsJson(lease.model()));
    }
    models.push_back(std::move(entry));
  }
  const RouterStats r = ctx.models->stats();
  return json{{"models", std::move(models)},
              {"router", {{"known", r.known}, {"loaded", r.loaded}, {"max_loaded", r.max_loaded},
                          {"idle_unload_s", r.idle_unload_s}, {"loads", r.loads}, {"load_failures", r.load_failures},
                          {"lru_unloads", r.lru_unloads}, {"idle_unloads", r.idle_unloads}, {"refused", r.refused},
                          {"memory_budget_bytes", r.memory_budget_bytes}, {"memory_charged_bytes", r.charged_bytes}}},
              {"tokens", TokensJson(*ctx.metrics)},
              {"uptime_s", ctx.SteadySeconds() - ctx.started_at}};
}

json StatsJson(ServerContext& ctx) {
  if (ctx.models->multi()) return MultiStatsJson(ctx);
  std::vector<ModelLease> one = ctx.models->LeaseLoaded();
  json out = ModelStatsJson(one.at(0).model());
  out["model"] = ctx.model_id;
  out["tokens"] = TokensJson(*ctx.metrics);
  out["uptime_s"] = ctx.SteadySeconds() - ctx.started_at;
  return out;
}

// The scheduler gauges (summed over the loaded models with several) and each lane's state.
Scheduler::Stats RefreshQueueMetrics(ServerContext& ctx, const std::vector<ModelLease>& loaded) {
  MetricsRegistry& m = *ctx.metrics;
  Scheduler::Stats sum;
  const bool multi = ctx.models->multi();
  if (multi) {
    m.ClearSeries("ember_lane_busy");  // lanes of models unloaded since the last scrape go
    m.ClearSeries("ember_lane_completed_total");
  }
  for (const ModelLease& lease : loaded) {
    const Scheduler::Stats q = lease.scheduler().stats();
    sum.queued += q.queued;
    sum.running += q.running;
    sum.rejected += q.rejected;
    sum.waiting_for_memory += q.waiting_for_memory;
    sum.admission_waits += q.admission_waits;
    sum.lanes += q.lanes;
    for (const Scheduler::LaneState& l : q.lane_states) {
      Labels lane = {{"lane", std::to_string(l.lane)}};
      if (multi) lane.insert(lane.begin(), {"model", lease.id()});
      m.Set("ember_lane_busy", lane, l.busy ? 1 : 0);
      m.Set("ember_lane_completed_total", lane, static_cast<double>(l.completed));
    }
  }
  m.Set("ember_queue_waiting", {}, static_cast<double>(sum.queued));
  m.Set("ember_queue_running", {}, static_cast<double>(sum.running));
  m.Set("ember_queue_rejected", {}, static_cast<double>(sum.rejected));
  m.Set("ember_queue_waiting_for_memory", {}, static_cast<double>(sum.waiting_for_memory));
  m.Set("ember_queue_admission_waits_total", {}, static_cast<double>(sum.admission_waits));
  m.Set("ember_queue_lanes", {}, static_cast<double>(sum.lanes));
  return sum;
}

void RefreshRouterMetrics(ServerContext& ctx) {
  MetricsRegistry& m = *ctx.metrics;
  const RouterStats r = ctx.models->stats();
  m.Set("ember_models_known", {}, static_cast<double>(r.known));
  m.Set("ember_models_loaded", {}, static_cast<double>(r.loaded));
  for (const ModelStatus& s : ctx.models->List()) {
    m.Set("ember_model_loaded", {{"model", s.spec.name}}, s.state == ModelState::kLoaded ? 1 : 0);
  }
  m.Set("ember_model_loads_total", {}, static_cast<double>(r.loads));
  m.Set("ember_model_load_failures_total", {}, static_cast<double>(r.load_failures));
  m.Set("ember_model_unloads_total", {{"reason", "lru"}}, static_cast<double>(r.lru_unloads));
  m.Set("ember_model_unloads_total", {{"reason", "idle"}}, static_cast<double>(r.idle_unloads));
  m.Set("ember_model_loads_refused_total", {}, static_cast<double>(r.refused));
  m.Set("ember_memory_budget_bytes", {}, static_cast<double>(r.memory_budget_bytes));
  m.Set("ember_memory_charged_bytes", {}, static_cast<double>(r.charged_bytes));
}

std::string MetricsText(ServerContext& ctx) {
  MetricsRegistry& m = *ctx.metrics;
  std::vector<ModelLease> loaded = ctx.models->LeaseLoaded();
  const Scheduler::Stats q = RefreshQueueMetrics(ctx, loaded);
  m.Set("ember_uptime_seconds", {}, ctx.SteadySeconds() - ctx.started_at);
  if (ctx.refresh_connection_metrics) ctx.refresh_connection_metrics();
  if (!ctx.models->multi()) {
    const BackendStats b = loaded.at(0).backend().Stats();
    RefreshLlamaMetrics(m, q, std::span<const BackendStats>(&b, 1));
    return m.RenderPrometheus() + RenderBackendStatsPrometheus(b);
  }
  RefreshRouterMetrics(ctx);
  // llama-server's gauges see every loaded model as one server: the queues and engines summed.
  std::vector<LabeledBackendStats> all;
  std::vector<BackendStats> engines;
  for (const ModelLease& lease : loaded) {
    all.push_back({{{"model", lease.id()}}, lease.backend().Stats()});
    engines.push_back(all.back().stats);
  }
  RefreshLlamaMetrics(m, q, engines);
  return m.RenderPrometheus() + RenderBackendStatsPrometheus(all);
}

}  // namespace

std::vector<Route> AdminRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  std::vector<Route> routes = {
      {"GET", "/health", ApiFlavor::kOpenAI, /*needs_auth=*/false,
       [c](Req, Res s) -> std::optional<ApiError> {
         const bool draining = c->draining.load();
         SetJson(s, HealthJson(*c), draining ? 503 : 200);
         return std::nullopt;
       }},
      {"GET", "/stats", ApiFlavor::kOpenAI, true,
       [c](Req, Res s) -> std::optional<ApiError> {
         SetJson(s, StatsJson(*c));
         return std::nullopt;
       }},
      {"GET", "/metrics", ApiFlavor::kOpenAI, true,
       [c](Req, Res s) -> std::optional<ApiError> {
         if (!c->options.metrics_endpoint) {
           return ApiError{501, "not_supported_error", "This server does not support metrics endpoint (--no-metrics).", ""};
         }
         // llama-server's header; its dashboards read the start time from it.
         const double start = static_cast<double>(c->UnixSeconds()) - (c->SteadySeconds() - c->started_at);
         s.set_header("Process-Start-Time-Unix", std::to_string(static_cast<int64_t>(start)));
         s.set_content(MetricsText(*c), "text/plain; version=0.0.4; charset=utf-8");
         return std::nullopt;
       }},
      {"POST", "/admin/cache/flush", ApiFlavor::kOpenAI, true,
       [c](Req, Res s) -> std::optional<ApiError> {
         Status st = c->models->FlushAll();
         if (!st.ok()) return FromStatus(st);
         SetJson(s, {{"flushed", true}});
         return std::nullopt;
       }},
  };
  // Every tenant's counters and cache: the admin's (access_control.h); /health stays open.
  for (Route& r : routes) r.admin = r.path != "/health";
  return routes;
}

}  // namespace ember::server
