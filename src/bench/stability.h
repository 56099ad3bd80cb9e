// Run-stability policy (docs/bench-spec.md §3). A clean preflight does not prove clean measurements; the
// direct quality signal is the spread of repeated runs. Interference (a background indexer, a thermal
// dip) only ever slows a run down, so when runs disagree the *fast* cluster is the truth:
//
//   spread = max/min of a cell's runs.  spread <= 1.15            -> `stable`, median of all runs
//   otherwise run up to 3 extra rounds; after each one, if the 3 fastest agree within 1.05
//                                                                  -> `stabilized`, median of those 3
//   still not                                                      -> `unstable`, verdict withheld
//
// "Fastest" depends on the metric: larger is faster for tok/s, smaller is faster for TTFT/latency.
// Everything here is pure except the caller's callback that runs one more round.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::bench {

enum class Direction { kHigherIsFaster, kLowerIsFaster };

enum class StabilityTag { kStable, kStabilized, kUnstable };
const char* StabilityTagName(StabilityTag tag);
// Worst of two tags (unstable > stabilized > stable): a cell is as trustworthy as its worst metric.
StabilityTag WorseTag(StabilityTag a, StabilityTag b);

struct StabilityPolicy {
  double max_spread = 1.15;          // max/min beyond which a cell earns extra rounds
  int max_extra_rounds = 3;
  int fast_cluster_size = 3;         // how many of the fastest runs must agree
  double max_cluster_spread = 1.05;
};

enum class SeriesState { kStable, kNeedsMoreRounds, kStabilized, kUnstable };

struct SeriesJudgement {
  SeriesState state = SeriesState::kStable;
  double value = 0;   // the figure to report (median of all runs, or of the fast cluster)
  double spread = 1;  // max/min over all runs (NaN samples ignored)
};

// Judges one metric's series after `extra_rounds_run` extra rounds. NaN samples (a metric a run could
// not produce) are ignored; a series with no finite sample is `stable` with a NaN value.
SeriesJudgement JudgeSeries(const std::vector<double>& runs, Direction dir, const StabilityPolicy& policy,
                            int extra_rounds_run);

// The `k` fastest finite samples, fastest first.
std::vector<double> FastestK(const std::vector<double>& runs, Direction dir, int k);

struct MetricSpec {
  std::string name;
  Direction dir = Direction::kHigherIsFaster;
};

struct MetricOutcome {
  std::string name;
  StabilityTag tag = StabilityTag::kStable;
  double value = 0;
  double spread = 1;
};

struct CellStability {
  StabilityTag tag = StabilityTag::kStable;   // worst over metrics
  std::vector<MetricOutcome> metrics;          // in the order of the MetricSpecs
  std::vector<std::vector<double>> rounds;     // every round, including the extra ones
  int extra_rounds = 0;
};

// Runs one more measured round and returns its values, one per MetricSpec, in order.
using MoreRound = std::function<StatusOr<std::vector<double>>()>;

// Applies the policy to a cell measured on several metrics at once (one round yields all of them, e.g.
// prefill and decode). Extra rounds are run while any metric still needs them; a failed extra round
// aborts with its status. Precondition: every round has metrics.size() values.
StatusOr<CellStability> StabilizeCell(std::vector<std::vector<double>> rounds,
                                      const std::vector<MetricSpec>& metrics, const MoreRound& more,
                                      const StabilityPolicy& policy = {});

// Single-series convenience over StabilizeCell.
StatusOr<CellStability> StabilizeSeries(std::vector<double> runs, Direction dir,
                                        const std::function<StatusOr<double>()>& more,
                                        const StabilityPolicy& policy = {});

}  // namespace ember::bench
