#include "bench/load_client.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "bench/sse_parser.h"
#include "util/env.h"

namespace ember::bench {
namespace {

// Monotonic time in microseconds, from the process Env (docs/conventions.md "Time").
int64_t NowUs() { return Env::Default()->MonotonicMicros(); }
double Since(int64_t t0_us) { return static_cast<double>(NowUs() - t0_us) / 1e6; }
int64_t After(int64_t t0_us, double seconds) { return t0_us + static_cast<int64_t>(seconds * 1e6); }

std::string RequestBody(const LoadConfig& cfg) {
  return nlohmann::json{{"model", cfg.model},
                        {"messages", {{{"role", "user"}, {"content", cfg.prompt}}}},
                        {"max_tokens", cfg.max_tokens},
                        {"temperature", 0},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}}
      .dump();
}

// What one stream said about its own end, beyond the measured times.
struct StreamState {
  bool done = false;      // `data: [DONE]` arrived: the server ended the stream on purpose
  bool finished = false;  // a choice carried a finish_reason
  bool usage = false;     // `usage.completion_tokens` arrived
  double finish_s = 0;    // when the finish_reason arrived
};

// Reads one SSE payload into the result: content chunks set first/last chunk times, `usage` the tokens.
void OnEvent(const std::string& data, double t, RequestResult& r, StreamState& st) {
  if (data == "[DONE]") {
    st.done = true;
    return;
  }
  nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) return;
  if (j.contains("error")) {
    r.error = j["error"].dump().substr(0, 200);
    return;
  }
  if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens") &&
      j["usage"]["completion_tokens"].is_number_integer()) {
    r.completion_tokens = j["usage"]["completion_tokens"].get<int>();
    st.usage = true;
  }
  if (!j.contains("choices") || !j["choices"].is_array()) return;
  for (const auto& c : j["choices"]) {
    if (c.contains("finish_reason") && c["finish_reason"].is_string() && !st.finished) {
      st.finished = true;
      st.finish_s = t;
    }
    const auto* delta = c.contains("delta") ? &c["delta"] : nullptr;
    if (!delta || !delta->contains("content") || !(*delta)["content"].is_string()) continue;
    if ((*delta)["content"].get<std::string>().empty()) continue;
    if (r.ttft_s == 0) r.ttft_s = t;
    r.last_chunk_s = t;
  }
}

// Runs `count` requests with `in_flight` workers pulling from a shared counter (closed loop).
std::vector<RequestResult> ClosedLevel(const LoadConfig& cfg, int in_flight, int64_t deadline_us) {
  std::vector<RequestResult> results(static_cast<size_t>(cfg.requests_per_level));
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < in_flight; ++w)
    workers.emplace_back([&] {
      for (int i; (i = next++) < cfg.requests_per_level;) {
        if (NowUs() > deadline_us) {
          results[static_cast<size_t>(i)].error = "skipped: time budget exhausted";
          continue;
        }
        results[static_cast<size_t>(i)] = SendChatRequest(cfg);
      }
    });
  for (auto& t : workers) t.join();
  return results;
}

// Starts request i at i * 60/rpm seconds, whatever is still in flight (open loop).
std::vector<RequestResult> OpenLevel(const LoadConfig& cfg, double rpm, int64_t deadline_us) {
  std::vector<RequestResult> results(static_cast<size_t>(cfg.requests_per_level));
  std::vector<std::thread> threads;
  const int64_t t0 = NowUs();
  for (int i = 0; i < cfg.requests_per_level; ++i) {
    const int64_t at = After(t0, i * 60.0 / rpm);
    if (at > deadline_us) {
      results[static_cast<size_t>(i)].error = "skipped: time budget exhausted";
      continue;
    }
    Env::Default()->SleepForMicros(at - NowUs());
    threads.emplace_back([&cfg, &results, i] { results[static_cast<size_t>(i)] = SendChatRequest(cfg); });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace

Status CheckLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return Status::Ok();
  unsigned a, b, c, d;
  char extra;
  if (std::sscanf(host.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &extra) == 4 && a == 127 && b < 256 && c < 256 &&
      d < 256)
    return Status::Ok();
  return InvalidArgument("ember load only targets loopback (127.0.0.0/8, ::1, localhost), not '" + host + "'");
}

Status ValidateLoadConfig(const LoadConfig& cfg) {
  EMBER_RETURN_IF_ERROR(CheckLoopbackHost(cfg.host));
  if (cfg.port <= 0 || cfg.port > 65535) return InvalidArgument("port out of range");
  if (cfg.requests_per_level < 1 || cfg.requests_per_level > 2000) return InvalidArgument("requests per level must be 1..2000");
  if (cfg.concurrency.empty() && cfg.rpm.empty()) return InvalidArgument("no load levels (--concurrency or --rpm)");
  for (int c : cfg.concurrency)
    if (c < 1 || c > 256) return InvalidArgument("concurrency must be 1..256");
  for (double r : cfg.rpm)
    if (!(r > 0) || r > 60000) return InvalidArgument("requests per minute must be in (0, 60000]");
  if (cfg.max_tokens < 1 || !(cfg.request_timeout_s > 0) || !(cfg.max_total_s > 0))
    return InvalidArgument("max tokens, request timeout and time budget must be positive");
  return Status::Ok();
}

RequestResult SendChatRequest(const LoadConfig& cfg) {
  RequestResult r;
  httplib::Client cli(cfg.host, cfg.port);
  const auto secs = static_cast<time_t>(cfg.request_timeout_s);
  cli.set_connection_timeout(std::min<time_t>(secs, 10), 0);
  cli.set_read_timeout(secs, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = RequestBody(cfg);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  SseParser parser;
  StreamState stream;
  std::string body_head;  // the start of a non-SSE (error) body, for the message
  size_t received = 0;    // response body bytes, to tell a dropped stream from a refused connection
  bool timed_out = false;
  const int64_t t0 = NowUs();
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    const double t = Since(t0);
    received += len;
    if (body_head.size() < 300) body_head.append(data, std::min<size_t>(len, 300));
    for (const auto& ev : parser.Feed(std::string_view(data, len))) OnEvent(ev, t, r, stream);
    timed_out = Since(t0) >= cfg.request_timeout_s;
    return !timed_out;
  };
  auto res = cli.send(req);
  r.latency_s = Since(t0);
  // Each message says whose doing it was: this client's deadline is not a transport failure, and an
  // empty reply that the server ended properly (the model's first token was end-of-turn) is no error.
  if (timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%g", cfg.request_timeout_s);
    r.error = std::string("timeout: the stream did not end within --timeout ") + limit + " s";
  } else if (!res) {
    r.error = "transport: " + httplib::to_string(res.error()) + " (connection lost after " + std::to_string(received) +
              " response body bytes)";
  } else if (res->status != 200) {
    r.error = "HTTP " + std::to_string(res->status) + ": " + body_head.substr(0, 200);
  } else if (!r.error.empty()) {
    // an error event in the stream
  } else if (!stream.done) {
    r.error = "stream ended without data: [DONE] after " + std::to_string(received) + " bytes";
  } else if (!stream.usage) {
    r.error = "stream ended without usage.completion_tokens (include_usage was requested)";
  } else if (r.ttft_s == 0 && !stream.finished) {
    r.error = "stream ended without a content chunk or a finish_reason";
  } else if (r.ttft_s == 0) {
    r.ttft_s = r.last_chunk_s = stream.finish_s;  // an empty reply: its one token arrived with the finish
  }
  r.ok = r.error.empty();
  return r;
}

StatusOr<LoadReport> RunLoad(const LoadConfig& cfg) {
  EMBER_RETURN_IF_ERROR(ValidateLoadConfig(cfg));
  LoadReport rep;
  const int64_t deadline = After(NowUs(), cfg.max_total_s);
  for (int c : cfg.concurrency) {
    if (NowUs() > deadline) { rep.truncated = true; break; }
    const int64_t t0 = NowUs();
    auto results = ClosedLevel(cfg, c, deadline);
    rep.closed.push_back(SummarizeLevel("closed", c, results, Since(t0)));
  }
  for (double r : cfg.rpm) {
    if (NowUs() > deadline) { rep.truncated = true; break; }
    const int64_t t0 = NowUs();
    auto results = OpenLevel(cfg, r, deadline);
    rep.open.push_back(SummarizeLevel("open", r, results, Since(t0)));
  }
  for (const auto* v : {&rep.closed, &rep.open})
    for (const auto& l : *v) rep.total_errors += l.errors;
  rep.closed_knee = ClosedLoopKnee(rep.closed);
  rep.open_knee = OpenLoopKnee(rep.open);
  return rep;
}

nlohmann::json LoadReportToJson(const LoadReport& r) {
  auto level = [](const LevelStats& s) {
    return nlohmann::json{{"mode", s.mode}, {"level", s.level}, {"requests", s.requests}, {"errors", s.errors},
                          {"first_error", s.first_error}, {"wall_s", s.wall_s},
                          {"ttft_ms", {{"p50", s.ttft_p50_ms}, {"p95", s.ttft_p95_ms}, {"p99", s.ttft_p99_ms}}},
                          {"latency_ms", {{"p50", s.latency_p50_ms}, {"p95", s.latency_p95_ms}, {"p99", s.latency_p99_ms}}},
                          {"aggregate_tok_s", s.aggregate_tok_s}, {"per_request_tok_s", s.per_request_tok_s},
                          {"achieved_rpm", s.achieved_rpm}};
  };
  nlohmann::json closed = nlohmann::json::array(), open = nlohmann::json::array();
  for (const auto& s : r.closed) closed.push_back(level(s));
  for (const auto& s : r.open) open.push_back(level(s));
  auto knee = [](const std::vector<LevelStats>& v, const std::optional<size_t>& k) {
    return k ? nlohmann::json(v[*k].level) : nlohmann::json(nullptr);
  };
  return {{"closed", closed}, {"open", open}, {"closed_knee", knee(r.closed, r.closed_knee)},
          {"open_knee_rpm", knee(r.open, r.open_knee)}, {"errors", r.total_errors}, {"truncated", r.truncated}};
}

std::string LoadReportToText(const LoadReport& r) {
  std::string out = "mode    level  reqs err  ttft p50/p95/p99 ms        latency p50/p95/p99 ms     agg tok/s  req tok/s\n";
  char line[256];
  for (const auto* v : {&r.closed, &r.open})
    for (const auto& s : *v) {
      std::snprintf(line, sizeof(line), "%-6s %6.0f %5d %3d  %7.1f %7.1f %7.1f   %8.1f %8.1f %8.1f   %9.1f  %9.1f\n",
                    s.mode.c_str(), s.level, s.requests, s.errors, s.ttft_p50_ms, s.ttft_p95_ms, s.ttft_p99_ms,
                    s.latency_p50_ms, s.latency_p95_ms, s.latency_p99_ms, s.aggregate_tok_s, s.per_request_tok_s);
      out += line;
    }
  out += r.closed_knee ? "closed-loop knee: " + std::to_string(static_cast<int>(r.closed[*r.closed_knee].level)) +
                             " in flight (more load only queues)\n"
                       : std::string("closed-loop knee: not reached\n");
  if (!r.open.empty())
    out += r.open_knee ? "open-loop knee: " + std::to_string(static_cast<int>(r.open[*r.open_knee].level)) + " requests/min\n"
                       : std::string("open-loop knee: not reached\n");
  for (const auto* v : {&r.closed, &r.open})
    for (const auto& s : *v)
      if (s.errors > 0) out += s.mode + " " + std::to_string(static_cast<int>(s.level)) + ": first error: " + s.first_error + "\n";
  out += "errors: " + std::to_string(r.total_errors) + (r.total_errors ? " (must be 0)" : "") +
         (r.truncated ? "; time budget cut the run short" : "") + "\n";
  return out;
}

}  // namespace ember::bench
