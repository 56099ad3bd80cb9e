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

json StatsJson(ServerContext& ctx) {
  const BackendStats b = ctx.backend->Stats();
  const Scheduler::Stats q = ctx.scheduler->stats();
  json tiers = json::object();
  for (const CacheTierStats& t : b.cache_tiers) {
    json tier = ValuesJson(t.values);
    for (const HistogramValue& h : t.histograms) {
      tier[h.name] = {{"count", h.count}, {"sum", h.sum}, {"upper_bounds", h.upper_bounds},
                      {"cumulative_counts", h.cumulative_counts}};
    }
    tiers[t.tier] = std::move(tier);
  }
  return json{{"model", ctx.model_id},
              {"engine", {{"name", b.engine}, {"context_length", ctx.backend->context_length()}, {"values", ValuesJson(b.engine_values)}}},
              {"cache", {{"tiers", std::move(tiers)}}},
              {"queue", {{"waiting", q.queued}, {"running", q.running}, {"completed", q.completed},
                         {"rejected", q.rejected}, {"max_waiting", q.max_queue}, {"lanes", q.lanes},
                         {"waiting_for_memory", q.waiting_for_memory}, {"admission_waits", q.admission_waits}}},
              {"batch", {{"values", ValuesJson(b.batch_values)}}},
              {"lanes", LanesJson(q, b)},
              {"tokens", TokensJson(*ctx.metrics)},
              {"uptime_s", ctx.SteadySeconds() - ctx.started_at}};
}

std::string MetricsText(ServerContext& ctx) {
  const Scheduler::Stats q = ctx.scheduler->stats();
  MetricsRegistry& m = *ctx.metrics;
  m.Set("ember_queue_waiting", {}, static_cast<double>(q.queued));
  m.Set("ember_queue_running", {}, static_cast<double>(q.running));
  m.Set("ember_queue_rejected", {}, static_cast<double>(q.rejected));
  m.Set("ember_queue_waiting_for_memory", {}, static_cast<double>(q.waiting_for_memory));
  m.Set("ember_queue_admission_waits_total", {}, static_cast<double>(q.admission_waits));
  m.Set("ember_queue_lanes", {}, static_cast<double>(q.lanes));
  for (const Scheduler::LaneState& l : q.lane_states) {
    const Labels lane = {{"lane", std::to_string(l.lane)}};
    m.Set("ember_lane_busy", lane, l.busy ? 1 : 0);
    m.Set("ember_lane_completed_total", lane, static_cast<double>(l.completed));
  }
  m.Set("ember_uptime_seconds", {}, ctx.SteadySeconds() - ctx.started_at);
  const BackendStats b = ctx.backend->Stats();
  RefreshLlamaMetrics(m, q, b);
  return m.RenderPrometheus() + RenderBackendStatsPrometheus(b);
}

}  // namespace

std::vector<Route> AdminRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  return {
      {"GET", "/health", ApiFlavor::kOpenAI, /*needs_auth=*/false,
       [c](Req, Res s) -> std::optional<ApiError> {
         const bool draining = c->draining.load();
         SetJson(s, {{"status", draining ? "shutting_down" : "ok"}, {"model", c->model_id}}, draining ? 503 : 200);
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
         Status st = c->backend->FlushCache();
         if (!st.ok()) return FromStatus(st);
         SetJson(s, {{"flushed", true}});
         return std::nullopt;
       }},
  };
}

}  // namespace ember::server
