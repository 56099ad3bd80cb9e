// The one generator (issue #30). A StepLoop holds the sequences that have a slot and advances them
// together, one Engine::Step per Turn: the decode rows of every decoding sequence plus prompt chunks,
// as engine/step_planner.h decides from their states, the row budget and the step time target. After
// the forward pass each sequence samples its rows (engine/gen_sequence.h).
//
// BatchRunner drives one on its step thread for the server's concurrent requests; Engine::Generate
// drives one inline, on the caller's thread, for a single sequence (a batch of one). Because the
// forward pass is batch invariant and every sequence samples through GenSequence, a sequence's tokens
// and logits are the same either way.
//
// In-flight prefix sharing: a prefilling sequence whose prompt shares a prefix with an earlier sequence
// (same share_key) adopts a zero-copy view of what that one holds, and waits while it computes more of
// the shared part (the planner's share waits: only on earlier sequences, so never a cycle).
//
// Not thread-safe: one thread drives a loop (its callbacks run on that thread).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "engine/gen_sequence.h"
#include "engine/step_cost.h"
#include "engine/step_planner.h"
#include "util/env.h"

namespace ember {

struct StepLoopOptions {
  int max_seqs = 1;
  int64_t step_tokens = 256;       // rows of a step while anyone decodes (--step-tokens)
  int64_t prefill_rows = 512;      // rows of a step while nobody decodes (at least step_tokens)
  double step_ms = 0;              // step time target while anyone decodes (--step-ms); 0: rows only
  int64_t min_prompt_rows = 16;    // a time-cut prompt chunk is never smaller
  int draft_rows_per_step = 0;     // speculative rows one step may verify, all sequences together
  uint64_t mask_step_work = 0;     // grammar work per sequence per step (grammar/mask_budget.h)
  Env* env = nullptr;              // null: Env::Default()
};

// What the loop has done, for /stats and /metrics (BatchRunnerStats).
struct StepCounters {
  uint64_t steps = 0;
  uint64_t step_rows = 0, decode_rows = 0, prompt_rows = 0;
  uint64_t draft_rows = 0, draft_accepted = 0;
  uint64_t mask_waits = 0;
  uint64_t occupancy_sum = 0;      // Σ slices per step
  double step_seconds = 0;
  double last_step_ms = 0;
  double last_predicted_ms = 0;    // the cost model's estimate of the last step (0: not fitted yet)
};

class StepLoop {
 public:
  StepLoop(Engine& engine, StepLoopOptions options);

  int free_slots() const { return opts_.max_seqs - static_cast<int>(active_.size()); }
  bool empty() const { return active_.empty(); }
  const std::vector<std::shared_ptr<GenSequence>>& active() const { return active_; }
  // Gives a sequence a slot (it must have passed ValidateJob). Needs free_slots() > 0.
  void Add(std::shared_ptr<GenSequence> s);
  // One turn: cancellations, prefix sharing, releasing the sequences that finished (returned, in
  // admission order, no longer held), then one planned step and its sampling.
  std::vector<std::shared_ptr<GenSequence>> Turn();

  const StepCounters& counters() const { return counters_; }
  const StepCostModel& cost_model() const { return cost_; }

 private:
  void ShareInFlight();
  std::vector<std::shared_ptr<GenSequence>> ReleaseFinished();
  std::vector<PlannedSeq> Describe();
  void RunStep(const StepPlan& plan);
  void Dispatch(const StepPlan& plan, const std::vector<GenSequence*>& owners, const Status& step_status,
                const std::vector<Status>& status, double seconds);

  Engine& engine_;
  StepLoopOptions opts_;
  Env* env_;
  std::unique_ptr<StepContext> ctx_;
  std::vector<std::shared_ptr<GenSequence>> active_;  // admission order
  std::unordered_map<uint64_t, uint64_t> waits_;      // this turn: sequence order -> the donor it waits for
  // This turn: a donor that cannot be viewed short of its end (a hybrid) -> the shortest prefix a waiter
  // shares with it, where its next chunk must end so the waiter can adopt it.
  std::unordered_map<uint64_t, int64_t> share_cuts_;
  uint64_t next_order_ = 0;
  StepCostModel cost_;
  StepCounters counters_;
};

// One job through a loop of its own on the caller's thread (serial generation: Engine::Generate, the
// session layer without a runner). Prompt chunks of `ubatch` rows (0: the engine's); the whole mask
// every step (nobody else waits on it). Errors as BatchRunner::Run's.
StatusOr<BatchJobResult> RunAlone(Engine& engine, BatchJob job, int64_t ubatch = 0);

}  // namespace ember
