#include "bench/stability.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bench/stats.h"

namespace ember::bench {
namespace {

std::vector<double> Finite(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v)
    if (std::isfinite(x)) out.push_back(x);
  return out;
}

StabilityTag TagOf(SeriesState s) {
  switch (s) {
    case SeriesState::kStabilized: return StabilityTag::kStabilized;
    case SeriesState::kUnstable: return StabilityTag::kUnstable;
    default: return StabilityTag::kStable;
  }
}

std::vector<double> Column(const std::vector<std::vector<double>>& rounds, size_t m) {
  std::vector<double> col;
  col.reserve(rounds.size());
  for (const auto& r : rounds) col.push_back(r[m]);
  return col;
}

}  // namespace

const char* StabilityTagName(StabilityTag tag) {
  switch (tag) {
    case StabilityTag::kStable: return "stable";
    case StabilityTag::kStabilized: return "stabilized";
    case StabilityTag::kUnstable: return "unstable";
  }
  return "unknown";
}

StabilityTag WorseTag(StabilityTag a, StabilityTag b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

std::vector<double> FastestK(const std::vector<double>& runs, Direction dir, int k) {
  std::vector<double> v = Finite(runs);
  if (dir == Direction::kHigherIsFaster)
    std::sort(v.begin(), v.end(), std::greater<>());
  else
    std::sort(v.begin(), v.end());
  if (k >= 0 && v.size() > static_cast<size_t>(k)) v.resize(static_cast<size_t>(k));
  return v;
}

SeriesJudgement JudgeSeries(const std::vector<double>& runs, Direction dir, const StabilityPolicy& policy,
                            int extra_rounds_run) {
  const std::vector<double> v = Finite(runs);
  SeriesJudgement j;
  if (v.empty()) {
    j.value = std::numeric_limits<double>::quiet_NaN();
    return j;
  }
  j.spread = SpreadRatio(v);
  if (j.spread <= policy.max_spread) {
    j.value = Median(v);
    return j;
  }
  // The fast-cluster escape is only granted after extra rounds: a verdict rests on more evidence
  // than the runs that looked noisy in the first place.
  if (extra_rounds_run > 0 && static_cast<int>(v.size()) >= policy.fast_cluster_size) {
    const std::vector<double> fast = FastestK(v, dir, policy.fast_cluster_size);
    if (SpreadRatio(fast) <= policy.max_cluster_spread) {
      j.state = SeriesState::kStabilized;
      j.value = Median(fast);
      return j;
    }
  }
  j.state = extra_rounds_run < policy.max_extra_rounds ? SeriesState::kNeedsMoreRounds : SeriesState::kUnstable;
  j.value = Median(v);
  return j;
}

StatusOr<CellStability> StabilizeCell(std::vector<std::vector<double>> rounds,
                                      const std::vector<MetricSpec>& metrics, const MoreRound& more,
                                      const StabilityPolicy& policy) {
  if (rounds.empty()) return InvalidArgument("stability policy needs at least one round");
  for (const auto& r : rounds)
    if (r.size() != metrics.size()) return InvalidArgument("a round has the wrong number of metrics");
  CellStability cell;
  for (int extra = 0;; ++extra) {
    bool needs_more = false;
    std::vector<SeriesJudgement> js;
    for (size_t m = 0; m < metrics.size(); ++m) {
      js.push_back(JudgeSeries(Column(rounds, m), metrics[m].dir, policy, extra));
      needs_more |= js.back().state == SeriesState::kNeedsMoreRounds;
    }
    if (!needs_more || !more) {
      cell.metrics.clear();
      cell.tag = StabilityTag::kStable;
      for (size_t m = 0; m < metrics.size(); ++m) {
        // Without a callback a noisy series cannot earn its extra rounds: it is unstable.
        StabilityTag t = js[m].state == SeriesState::kNeedsMoreRounds ? StabilityTag::kUnstable : TagOf(js[m].state);
        cell.metrics.push_back({metrics[m].name, t, js[m].value, js[m].spread});
        cell.tag = WorseTag(cell.tag, t);
      }
      cell.rounds = std::move(rounds);
      cell.extra_rounds = extra;
      return cell;
    }
    StatusOr<std::vector<double>> next = more();
    if (!next.ok()) return next.status().WithContext("extra stability round");
    if (next->size() != metrics.size()) return Internal("extra round returned the wrong number of metrics");
    rounds.push_back(std::move(next).value());
  }
}

StatusOr<CellStability> StabilizeSeries(std::vector<double> runs, Direction dir,
                                        const std::function<StatusOr<double>()>& more,
                                        const StabilityPolicy& policy) {
  std::vector<std::vector<double>> rounds;
  for (double r : runs) rounds.push_back({r});
  MoreRound wrapped;
  if (more) {
    wrapped = [&more]() -> StatusOr<std::vector<double>> {
      EMBER_ASSIGN_OR_RETURN(double v, more());
      return std::vector<double>{v};
    };
  }
  return StabilizeCell(std::move(rounds), {{"value", dir}}, wrapped, policy);
}

}  // namespace ember::bench
