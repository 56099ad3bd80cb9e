#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember::server {
namespace {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// Label set with one more label appended (for histogram `le`).
std::string WithLabel(const std::string& rendered, const std::string& key, const std::string& value) {
  const std::string extra = key + "=\"" + value + "\"";
  if (rendered.empty()) return "{" + extra + "}";
  return rendered.substr(0, rendered.size() - 1) + "," + extra + "}";
}

void Header(std::string& out, const std::string& name, const std::string& help, const std::string& type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
  }
  return out + "}";
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

void MetricsRegistry::DefineCounter(const std::string& name, const std::string& help) {
  MutexLock lock(&mu_);
  families_.push_back({name, help, "counter", {}, {}});
}

void MetricsRegistry::DefineGauge(const std::string& name, const std::string& help) {
  MutexLock lock(&mu_);
  families_.push_back({name, help, "gauge", {}, {}});
}

void MetricsRegistry::DefineHistogram(const std::string& name, const std::string& help,
                                      std::vector<double> upper_bounds) {
  std::sort(upper_bounds.begin(), upper_bounds.end());
  MutexLock lock(&mu_);
  families_.push_back({name, help, "histogram", std::move(upper_bounds), {}});
}

MetricsRegistry::Family* MetricsRegistry::Find(const std::string& name) {
  for (Family& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void MetricsRegistry::Add(const std::string& name, const Labels& labels, double delta) {
  MutexLock lock(&mu_);
  if (Family* f = Find(name)) f->series[RenderLabels(labels)].value += delta;
}

void MetricsRegistry::Set(const std::string& name, const Labels& labels, double value) {
  MutexLock lock(&mu_);
  if (Family* f = Find(name)) f->series[RenderLabels(labels)].value = value;
}

void MetricsRegistry::Observe(const std::string& name, const Labels& labels, double value) {
  MutexLock lock(&mu_);
  Family* f = Find(name);
  if (f == nullptr) return;
  Series& s = f->series[RenderLabels(labels)];
  s.buckets.resize(f->bounds.size());
  for (size_t i = 0; i < f->bounds.size(); ++i) {
    if (value <= f->bounds[i]) {
      ++s.buckets[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

void MetricsRegistry::ClearSeries(const std::string& name) {
  MutexLock lock(&mu_);
  if (Family* f = Find(name)) f->series.clear();
}

double MetricsRegistry::Value(const std::string& name, const Labels& labels) const {
  MutexLock lock(&mu_);
  for (const Family& f : families_) {
    if (f.name != name) continue;
    auto it = f.series.find(RenderLabels(labels));
    return it == f.series.end() ? 0 : it->second.value;
  }
  return 0;
}

double MetricsRegistry::Total(const std::string& name) const {
  MutexLock lock(&mu_);
  double total = 0;
  for (const Family& f : families_) {
    if (f.name != name) continue;
    for (const auto& [labels, s] : f.series) total += s.value;
  }
  return total;
}

std::string MetricsRegistry::RenderPrometheus() const {
  MutexLock lock(&mu_);
  std::string out;
  for (const Family& f : families_) {
    Header(out, f.name, f.help, f.type);
    for (const auto& [labels, s] : f.series) {
      if (f.type != "histogram") {
        out += f.name + labels + " " + FormatMetricValue(s.value) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        cumulative += i < s.buckets.size() ? s.buckets[i] : 0;
        out += f.name + "_bucket" + WithLabel(labels, "le", FormatMetricValue(f.bounds[i])) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += f.name + "_bucket" + WithLabel(labels, "le", "+Inf") + " " + std::to_string(s.count) + "\n";
      out += f.name + "_sum" + labels + " " + FormatMetricValue(s.sum) + "\n";
      out += f.name + "_count" + labels + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

namespace {

// Collects samples per family name so each family gets exactly one HELP/TYPE header.
struct FamilyText {
  std::string name, help, type, samples;
};

FamilyText& FamilyFor(std::vector<FamilyText>& fams, const std::string& name, const std::string& help,
                      const std::string& type) {
  for (FamilyText& f : fams) {
    if (f.name == name) return f;
  }
  fams.push_back({name, help, type, ""});
  return fams.back();
}

void AddValues(std::vector<FamilyText>& fams, const std::string& prefix, const std::vector<StatValue>& values,
               const Labels& labels) {
  for (const StatValue& v : values) {
    const std::string name = prefix + v.name + (v.monotonic ? "_total" : "");
    FamilyText& f = FamilyFor(fams, name, "backend-reported " + v.name, v.monotonic ? "counter" : "gauge");
    f.samples += name + RenderLabels(labels) + " " + FormatMetricValue(v.value) + "\n";
  }
}

void AddHistogram(std::vector<FamilyText>& fams, const std::string& prefix, const HistogramValue& h,
                  const Labels& labels) {
  const std::string name = prefix + h.name;
  FamilyText& f = FamilyFor(fams, name, "backend-reported " + h.name, "histogram");
  const std::string rendered = RenderLabels(labels);
  for (size_t i = 0; i < h.upper_bounds.size() && i < h.cumulative_counts.size(); ++i) {
    f.samples += name + "_bucket" + WithLabel(rendered, "le", FormatMetricValue(h.upper_bounds[i])) + " " +
                 std::to_string(h.cumulative_counts[i]) + "\n";
  }
  f.samples += name + "_bucket" + WithLabel(rendered, "le", "+Inf") + " " + std::to_string(h.count) + "\n";
  f.samples += name + "_sum" + rendered + " " + FormatMetricValue(h.sum) + "\n";
  f.samples += name + "_count" + rendered + " " + std::to_string(h.count) + "\n";
}

}  // namespace

std::vector<StatValue> LaneValues(const LaneStats& lane) {
  return {{"requests", static_cast<double>(lane.requests)},
          {"cache_hits", static_cast<double>(lane.cache_hits)},
          {"prompt_tokens", static_cast<double>(lane.prompt_tokens)},
          {"cached_tokens", static_cast<double>(lane.cached_tokens)}};
}

std::string RenderBackendStatsPrometheus(const BackendStats& stats) {
  return RenderBackendStatsPrometheus(std::vector<LabeledBackendStats>{{{}, stats}});
}

std::string RenderBackendStatsPrometheus(const std::vector<LabeledBackendStats>& all) {
  std::vector<FamilyText> fams;
  auto with = [](Labels labels, const Labels& more) {
    labels.insert(labels.end(), more.begin(), more.end());
    return labels;
  };
  for (const auto& [base, stats] : all) {
    AddValues(fams, "ember_engine_", stats.engine_values, base);
    for (const CacheTierStats& tier : stats.cache_tiers) {
      const Labels labels = with(base, {{"tier", tier.tier}});
      AddValues(fams, "ember_cache_", tier.values, labels);
      for (const HistogramValue& h : tier.histograms) AddHistogram(fams, "ember_cache_", h, labels);
    }
    AddValues(fams, "ember_batch_", stats.batch_values, base);
    for (const LaneStats& lane : stats.lanes) {
      AddValues(fams, "ember_lane_", LaneValues(lane), with(base, {{"lane", std::to_string(lane.lane)}}));
    }
  }
  std::string out;
  for (const FamilyText& f : fams) {
    Header(out, f.name, f.help, f.type);
    out += f.samples;
  }
  return out;
}

}  // namespace ember::server
