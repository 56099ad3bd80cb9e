// Operational endpoints: /health, /stats, /metrics, /admin/cache/flush, /tokenize, /detokenize,
// /apply-template. Also SetJson and StartEventStream of routes.h (ParseJsonBody lives in json_input.cc).
#include <cstdio>

#include "server/completion_flow.h"
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
  return m.RenderPrometheus() + RenderBackendStatsPrometheus(ctx.backend->Stats());
}

std::optional<ApiError> Tokenize(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  std::optional<ApiError> err;
  FieldReader r(body.value(), "", &err);
  std::string content;
  bool add_special = true, parse_special = true, with_pieces = false;
  r.String("content", &content);
  r.Bool("add_special", &add_special);
  r.Bool("parse_special", &parse_special);
  r.Bool("with_pieces", &with_pieces);
  if (!err && !body.value().contains("content")) r.Fail("content", "'content' is required");
  if (err) return *err;
  StatusOr<std::vector<int32_t>> ids = ctx.backend->Tokenize(content, add_special, parse_special);
  if (!ids.ok()) return FromStatus(ids.status());
  json tokens = json::array();
  for (int32_t id : *ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    StatusOr<std::string> piece = ctx.backend->Detokenize({id});
    tokens.push_back({{"id", id}, {"piece", piece.ok() ? *piece : ""}});
  }
  SetJson(res, {{"tokens", tokens}});
  return std::nullopt;
}

std::optional<ApiError> Detokenize(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  const json* tokens = body.value().is_object() && body.value().contains("tokens") ? &body.value()["tokens"] : nullptr;
  if (tokens == nullptr || !tokens->is_array()) return InvalidRequest("'tokens' must be an array of token ids", "tokens");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!(*tokens)[i].is_number_integer()) {
      return InvalidRequest("'tokens[" + std::to_string(i) + "]' must be an integer", "tokens[" + std::to_string(i) + "]");
    }
    ids.push_back((*tokens)[i].get<int32_t>());
  }
  StatusOr<std::string> text = ctx.backend->Detokenize(ids);
  if (!text.ok()) return FromStatus(text.status());
  SetJson(res, {{"content", *text}});
  return std::nullopt;
}

// Body: an OpenAI chat request (messages, tools, chat_template_kwargs); returns the rendered prompt.
std::optional<ApiError> ApplyTemplate(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<CompletionRequest> req = ParseOpenAIChatRequest(body.value());
  if (!req.ok()) return req.error();
  StatusOr<std::string> text =
      ctx.backend->ApplyChatTemplate({req.value().messages, req.value().tools, true, req.value().template_kwargs});
  if (!text.ok()) return FromStatus(text.status());
  SetJson(res, {{"prompt", *text}});
  return std::nullopt;
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
      {"POST", "/tokenize", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return Tokenize(*c, q, s); }},
      {"POST", "/detokenize", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return Detokenize(*c, q, s); }},
      {"POST", "/apply-template", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return ApplyTemplate(*c, q, s); }},
  };
}

}  // namespace ember::server
