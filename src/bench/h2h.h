// `ember h2h`: head-to-head cells model x stack x leg, measured by the method of docs/bench-spec.md §3:
//   - tokenize once per model; every stack gets the same ids, model file and thread count;
//   - preflight before each leg and again after it (so between legs); both snapshots go in the row;
//   - one discarded warm-up round per stack (page cache, lazy loads);
//   - N measured rounds interleaved A B A B so slow drift hits every stack alike; median of N;
//   - the run-stability policy per cell (stability.h): extra rounds, `stabilized` / `unstable` tags;
//   - every cell stored as one eval-DB row with its machine state, commit, model hash and peer version;
//   - resumable: a cell already in the DB for this commit+model+stack+leg+threads is skipped unless
//     `redo`.
// A stack that cannot run a leg says why (StackRunner::SkipReason): an "n/a: ..." reason is stored as a
// row tagged `n/a` so the report shows it; other reasons are only printed. Cache legs are judged per
// turn (one metric per turn's TTFT) and stored as one row per turn. Load legs (concurrency, agents) are
// judged per level (aggregate tok/s and TTFT p50 per client count; wall time and TTFT p50 of the agents
// workload) and stored as one row per level, its client count in `clients`.
//
// Everything outside (stacks, DB, tokenizer, preflight, clock) comes in through H2hEnv, so tests run the
// whole orchestration with fakes in milliseconds.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/eval_db.h"
#include "util/progress.h"
#include "bench/source_revision.h"
#include "bench/stability.h"
#include "bench/stack_runner.h"
#include "util/env.h"

namespace ember::bench {

struct H2hConfig {
  std::vector<std::string> models;
  std::vector<Leg> legs = {Leg::kDirect};
  int threads = 1;
  int prompt_tokens = 512;
  int gen_tokens = 128;
  int rounds = 5;
  int turns = 10;            // cache legs: turns of the conversation
  int turn_gen_tokens = 16;  // cache legs: tokens generated per turn
  std::vector<int> clients = {1, 2, 4, 8};  // concurrency leg: client counts
  int client_gen_tokens = 96;               // concurrency leg: tokens per client
  int client_prompt_tokens = 64;            // concurrency leg: prompt ids per client
  int agents = 4, agent_turns = 4, agent_gen_tokens = 32, preamble_tokens = 1400;  // agents leg
  bool warmup = true;
  bool redo = false;
  StabilityPolicy policy;
};

struct PreflightSnapshot {
  bool ok = true;
  nlohmann::json state;  // the preflight JSON stored in the row
};

struct H2hEnv {
  std::vector<StackRunner*> stacks;  // in interleaving order: A B A B ...
  EvalDb* db = nullptr;
  // Exactly `n` token ids of a fixed prompt for `model`.
  std::function<StatusOr<std::vector<int32_t>>(const std::string& model, int n)> tokenize;
  // Cache legs: turn k's full prompt ids of the fixed conversation (served_bench.h), once per model.
  std::function<StatusOr<std::vector<std::vector<int32_t>>>(const std::string& model, int turns)> conversation;
  std::function<PreflightSnapshot()> preflight;
  Env* clock = nullptr;              // created_at timestamps (its WallMicros); null: Env::Default()
  SourceRevision revision;
  ProgressBar* progress = nullptr;   // optional: one unit per measured round
  std::function<void(const std::string&)> log;  // optional, one line per event
};

struct CellOutcome {
  std::string model, stack, leg;
  std::string status;  // "stored", "skipped: already in the eval DB", "skipped: ...", "failed: ..."
  std::optional<int64_t> row_id;
  std::optional<StabilityTag> tag;
  nlohmann::json figures;  // load legs: one object per level (the stored rows' figures); null otherwise
};

struct H2hSummary {
  std::vector<CellOutcome> cells;
  int stored = 0, skipped = 0, failed = 0;
};

// The metrics a leg's rounds are judged on, and how to read each from a measurement.
struct LegMetric {
  MetricSpec spec;
  std::optional<double> RunMeasurement::*field;  // unused when turn > 0 or clients > 0
  int turn = 0;                                  // cache legs: the TTFT of this turn (1-based)
  int clients = 0;                               // load legs: this level's ...
  double LoadMeasurement::*load_field = nullptr; // ... figure
};
// `levels`: the client counts of the concurrency leg, or {agents} for the agents leg.
std::vector<LegMetric> MetricsForLeg(Leg leg, int turns = 10, const std::vector<int>& levels = {});
// A metric's value in one measurement (NaN when the run did not produce it).
double MetricValue(const RunMeasurement& m, const LegMetric& metric);

// Fails only on setup errors (no stacks, no DB, bad config); a failing stack fails its cells.
StatusOr<H2hSummary> RunH2h(const H2hConfig& config, H2hEnv& env);

nlohmann::json H2hSummaryToJson(const H2hSummary& s);

}  // namespace ember::bench
