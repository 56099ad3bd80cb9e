// `ember load`: a serving-load client for ember's OpenAI-compatible server (docs/bench-spec.md §6).
// Closed loop: 1..N requests in flight; open loop: requests started on a fixed schedule (per minute).
// Each request is `POST /v1/chat/completions` with `stream: true`; TTFT is measured at the client
// (sent -> first content chunk; an empty reply's finish chunk) and tokens come from the final `usage`.
// An error says whose it is: the server's (HTTP status, error event, a stream cut or ended without
// [DONE]/usage) or this client's own timeout; nothing else is counted.
// Loopback only: a load generator must never be pointed at someone else's machine. Bounded: every
// level has a request count, every request a timeout, the whole run a wall-clock budget.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/load_stats.h"
#include "util/status.h"

namespace ember::bench {

struct LoadConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string model = "ember";
  std::string prompt = "Write a short paragraph about lighthouses.";
  int max_tokens = 64;
  std::vector<int> concurrency = {1, 2, 4, 8};  // closed-loop levels
  std::vector<double> rpm;                      // open-loop levels (requests per minute)
  int requests_per_level = 16;
  double request_timeout_s = 120;
  double max_total_s = 600;                     // the whole run; later levels are skipped past it
};

struct LoadReport {
  std::vector<LevelStats> closed, open;
  std::optional<size_t> closed_knee, open_knee;  // indexes into closed / open
  int total_errors = 0;
  bool truncated = false;                        // the time budget cut the run short
};

// Accepts 127.0.0.0/8, ::1 and "localhost"; anything else is InvalidArgument.
Status CheckLoopbackHost(const std::string& host);
// Validates bounds (counts, levels, timeouts) before any request is sent.
Status ValidateLoadConfig(const LoadConfig& cfg);

// One streaming request, measured.
RequestResult SendChatRequest(const LoadConfig& cfg);

StatusOr<LoadReport> RunLoad(const LoadConfig& cfg);

nlohmann::json LoadReportToJson(const LoadReport& r);
std::string LoadReportToText(const LoadReport& r);

}  // namespace ember::bench
