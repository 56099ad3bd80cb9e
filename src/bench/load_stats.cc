#include "bench/load_stats.h"

#include "bench/stats.h"

namespace ember::bench {

LevelStats SummarizeLevel(const std::string& mode, double level, const std::vector<RequestResult>& results,
                          double wall_s) {
  LevelStats s;
  s.mode = mode;
  s.level = level;
  s.wall_s = wall_s;
  s.requests = static_cast<int>(results.size());
  std::vector<double> ttft, lat, per_req;
  double tokens = 0;
  for (const auto& r : results) {
    if (!r.ok) {
      if (s.errors++ == 0) s.first_error = r.error;
      continue;
    }
    ttft.push_back(r.ttft_s * 1000);
    lat.push_back(r.latency_s * 1000);
    tokens += r.completion_tokens;
    const double span = r.last_chunk_s - r.ttft_s;
    if (r.completion_tokens > 1 && span > 0) per_req.push_back((r.completion_tokens - 1) / span);
  }
  s.ttft_p50_ms = Percentile(ttft, 50);
  s.ttft_p95_ms = Percentile(ttft, 95);
  s.ttft_p99_ms = Percentile(ttft, 99);
  s.latency_p50_ms = Percentile(lat, 50);
  s.latency_p95_ms = Percentile(lat, 95);
  s.latency_p99_ms = Percentile(lat, 99);
  s.per_request_tok_s = Median(per_req);
  if (wall_s > 0) {
    s.aggregate_tok_s = tokens / wall_s;
    s.achieved_rpm = static_cast<double>(ttft.size()) * 60.0 / wall_s;
  }
  return s;
}

std::optional<size_t> ClosedLoopKnee(const std::vector<LevelStats>& levels, double min_gain) {
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    const double now = levels[i].aggregate_tok_s, next = levels[i + 1].aggregate_tok_s;
    if (now > 0 && next < now * min_gain) return i;
  }
  return std::nullopt;
}

std::optional<size_t> OpenLoopKnee(const std::vector<LevelStats>& levels, double keep_up, double ttft_blowup) {
  if (levels.empty()) return std::nullopt;
  const double base_ttft = levels[0].ttft_p95_ms;
  for (size_t i = 0; i < levels.size(); ++i) {
    const bool behind = levels[i].achieved_rpm < keep_up * levels[i].level;
    const bool slow = base_ttft > 0 && levels[i].ttft_p95_ms > ttft_blowup * base_ttft;
    if (behind || slow) return i;
  }
  return std::nullopt;
}

}  // namespace ember::bench
