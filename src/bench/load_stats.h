// Statistics of a serving-load run (docs/bench-spec.md §6), pure so they are tested on synthetic data:
// per-level percentiles of TTFT and latency, aggregate and per-request tok/s, errors, and the
// saturation knee (the load level past which more load buys no more throughput).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ember::bench {

// One request as the client saw it. Times in seconds from the request being sent.
struct RequestResult {
  bool ok = false;
  std::string error;
  double ttft_s = 0;          // sent -> first content chunk
  double latency_s = 0;       // sent -> stream finished
  double last_chunk_s = 0;    // sent -> last content chunk
  int completion_tokens = 0;  // from the final `usage`
};

struct LevelStats {
  std::string mode;       // "closed" (level = requests in flight) or "open" (level = requests/minute)
  double level = 0;
  int requests = 0, errors = 0;
  double wall_s = 0;
  double ttft_p50_ms = 0, ttft_p95_ms = 0, ttft_p99_ms = 0;
  double latency_p50_ms = 0, latency_p95_ms = 0, latency_p99_ms = 0;
  double aggregate_tok_s = 0;    // all completion tokens / wall time of the level
  double per_request_tok_s = 0;  // median over requests of (tokens - 1) / (first -> last chunk)
  double achieved_rpm = 0;       // completed requests per minute
  std::string first_error;
};

// Percentiles over successful requests only; errors are counted, never averaged in.
LevelStats SummarizeLevel(const std::string& mode, double level, const std::vector<RequestResult>& results,
                          double wall_s);

// Closed loop: the knee is the first level whose successor gains less than `min_gain` (10%) in
// aggregate throughput: beyond it, extra requests in flight only queue. nullopt while throughput still
// grows at the highest level tried (not saturated yet) or with fewer than two levels.
std::optional<size_t> ClosedLoopKnee(const std::vector<LevelStats>& levels, double min_gain = 1.10);

// Open loop: the knee is the first offered rate the server cannot keep up with: it completes fewer
// than `keep_up` (90%) of the offered requests per minute, or its p95 TTFT exceeds `ttft_blowup` (3x)
// the lowest rate's. nullopt when every rate was served.
std::optional<size_t> OpenLoopKnee(const std::vector<LevelStats>& levels, double keep_up = 0.90,
                                   double ttft_blowup = 3.0);

}  // namespace ember::bench
