// A small Prometheus metrics registry (text exposition format 0.0.4): counters and histograms with
// labels, rendered in definition order. Families are defined once at startup; recording is thread-safe
// and takes one mutex (requests record a handful of values, so contention is negligible).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/backend.h"
#include "util/mutex.h"

namespace ember::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricsRegistry {
 public:
  void DefineCounter(const std::string& name, const std::string& help) EXCLUDES(mu_);
  void DefineGauge(const std::string& name, const std::string& help) EXCLUDES(mu_);
  void DefineHistogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds)
      EXCLUDES(mu_);

  // Recording into an undefined family is a programming error and is ignored.
  void Add(const std::string& name, const Labels& labels, double delta = 1) EXCLUDES(mu_);
  void Set(const std::string& name, const Labels& labels, double value) EXCLUDES(mu_);
  void Observe(const std::string& name, const Labels& labels, double value) EXCLUDES(mu_);

  // Drops every series of a family (gauges whose label sets come and go, e.g. a model's lanes).
  void ClearSeries(const std::string& name) EXCLUDES(mu_);

  // Counters/gauges; 0 if absent.
  double Value(const std::string& name, const Labels& labels) const EXCLUDES(mu_);
  // A counter or gauge summed over every label set (the route or tier labels); 0 if absent.
  double Total(const std::string& name) const EXCLUDES(mu_);
  std::string RenderPrometheus() const EXCLUDES(mu_);

 private:
  struct Series {
    double value = 0;                 // counter / gauge
    std::vector<uint64_t> buckets;    // histogram, per bound (not cumulative)
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    std::string name, help, type;
    std::vector<double> bounds;
    std::map<std::string, Series> series;  // rendered label set -> series
  };
  Family* Find(const std::string& name) REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Family> families_ GUARDED_BY(mu_);
};

// `{a="x",b="y"}` with Prometheus escaping; "" for no labels.
std::string RenderLabels(const Labels& labels);
// Number formatting for the exposition format (integers without exponent, +Inf/NaN spelled out).
std::string FormatMetricValue(double v);
// The backend's engine, per-tier cache and batching values as metric families: ember_engine_<name>,
// ember_cache_<name>{tier=...}, ember_batch_<name>; monotonic values get `_total` and TYPE counter.
// Per-lane stats are counters ember_lane_<field>_total{lane="i"} (requests, cache_hits, prompt_tokens,
// cached_tokens).
std::string RenderBackendStatsPrometheus(const BackendStats& stats);
// Several backends' stats in one exposition (each family's header once): every sample of a backend
// carries its `labels` first (with several models: {model="name"}).
struct LabeledBackendStats {
  Labels labels;
  BackendStats stats;
};
std::string RenderBackendStatsPrometheus(const std::vector<LabeledBackendStats>& all);
// One lane's stats as named values (what /stats and /metrics show per lane).
std::vector<StatValue> LaneValues(const LaneStats& lane);

}  // namespace ember::server
