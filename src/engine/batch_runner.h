// Continuous batching (issue #16, #30): the server's concurrent generations run on one step thread
// that drives a StepLoop (engine/step_loop.h, the only generator): up to `max_seqs` sequences advance
// together, one forward pass per step over every running sequence's decode rows plus prompt chunks
// sized by the step planner (rows, and time while anyone decodes), so a long prompt never holds up the
// others' streams for more than one short step.
//
// Each Run() call is one sequence's generation with exactly the semantics of Engine::Generate (which is
// the same loop with one sequence): same sampler, RNG use, stop rules, logprobs, cancellation, grammar
// budget and speculative decoding, and because the forward pass is batch invariant its tokens and logits
// are bitwise those of running it alone (the tests compare).
//
// Admission: FIFO over one queue (engine/step_planner.h AdmitFromQueue), the server's only admission
// rule: a job takes a slot when one is free and, with a KV budget, when its reservation
// (BatchJob::kv_bytes) fits beside those of the running jobs and what the budget holds outside them
// (kv_outside_bytes: the RAM prompt cache); a job that does not fit keeps everyone behind it waiting.
// Making room (shrinking the cache: disk writes) is the waiting job's Run() caller's work
// (BatchJob::make_room, every memory_poll_micros), never the step thread's. A job cancelled while it
// waits for a slot leaves the queue within one poll.
//
// Grammar masks (grammar/mask_budget.h): before each step a constrained sequence spends at most
// kMaskStepWork units on its next mask; one not ready by then sits the step out and goes on next step,
// so a costly grammar slows only its own sequence.
//
// Threading: Run() is called from any number of threads (the server's lanes) and blocks until that
// generation ends. One step thread owns the StepLoop and calls Engine::Step; on_token and
// on_prompt_done run on it and must be cheap (they sit between two forward passes of every running
// sequence).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/gen_sequence.h"
#include "engine/step_loop.h"
#include "util/env.h"
#include "util/mutex.h"

namespace ember {

struct BatchRunnerOptions {
  int max_seqs = 4;          // sequences advancing together (--parallel)
  // Rows per step while any sequence is decoding: its decode tokens plus prompt chunks (--step-tokens).
  // When none is decoding a step may carry up to max(step_tokens, the engine's ubatch) prompt rows.
  int64_t step_tokens = 256;
  Env* env = nullptr;        // clocks (timings, step time) and waits; null: Env::Default()
  // Speculative decoding (jobs' GenerateOptions::speculative): drafted rows one step may verify, all
  // sequences together (drafts go to decoding sequences in admission order while this lasts). It sizes
  // the step's logits buffer: (max_seqs + this) rows of n_vocab floats. 0: no job drafts.
  int draft_rows_per_step = 32;
  // Step time target while any sequence decodes (--step-ms): prompt chunks are cut so a step's predicted
  // time stays near it (engine/step_cost.h). 0: rows only.
  double step_ms = 0;
  // Σ BatchJob::kv_bytes of the jobs holding slots + kv_outside_bytes(); a job that would exceed it
  // waits (FIFO). 0: no limit.
  int64_t kv_budget_bytes = 0;
  // What the budget holds besides the reservations (the RAM cache's resident bytes), read before each
  // admission; may lock the cache, never the runner. Null: nothing.
  std::function<int64_t()> kv_outside_bytes;
  // How often a queued job's Run() re-checks cancellation and, while refused for memory, makes room.
  int64_t memory_poll_micros = 50'000;
};

struct BatchRunnerStats {
  int max_seqs = 0;
  int running = 0;               // sequences holding a slot (prefilling, waiting on a shared prefix, decoding)
  int prefilling = 0;
  int decoding = 0;
  int waiting = 0;               // Run() calls waiting for a slot
  uint64_t steps = 0;
  uint64_t step_rows = 0;        // tokens forwarded by all steps (decode + prompt)
  uint64_t decode_rows = 0;
  uint64_t prompt_rows = 0;
  uint64_t shared_tokens = 0;    // prompt positions adopted from in-flight sequences
  uint64_t draft_rows = 0;       // speculative decoding: drafted tokens verified (part of decode_rows)
  uint64_t draft_accepted = 0;   // ... and accepted
  uint64_t mask_waits = 0;       // times a sequence sat out a step (or ended a verify walk) for its grammar mask
  uint64_t occupancy_sum = 0;    // Σ sequences per step (mean occupancy = occupancy_sum / steps / max_seqs)
  int64_t kv_reserved_bytes = 0; // Σ kv_bytes of the jobs holding slots
  int kv_reservations = 0;       // jobs holding slots with kv_bytes > 0
  uint64_t kv_admitted = 0;      // jobs admitted with kv_bytes > 0
  int waiting_for_memory = 0;    // 1 while the queue's head is refused for memory (the rest wait behind it)
  uint64_t admission_waits = 0;  // jobs refused for memory at least once before their admission
  double step_seconds = 0;       // Σ step wall time (forward + sampling)
  double last_step_ms = 0;
  double last_predicted_ms = 0;  // the step cost model's estimate of the last step (0: not fitted yet)
  uint64_t completed = 0, failed = 0, cancelled = 0;
};

class BatchRunner {
 public:
  BatchRunner(Engine& engine, BatchRunnerOptions options);
  ~BatchRunner();  // Shutdown()
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // One generation, blocking. Errors: InvalidArgument for a bad job (ValidateJob), ResourceExhausted
  // for kv_bytes over the whole budget, FailedPrecondition after Shutdown, or the step's error for this
  // sequence (it alone fails; the others go on). Cancellation (options.cancel) is not an error: stop
  // kCancelled.
  StatusOr<BatchJobResult> Run(BatchJob job) EXCLUDES(mu_);

  // Cancels nothing by itself: waits for running and queued jobs to end (callers cancel them through
  // their flags), then stops the step thread. Later Run() calls fail.
  void Shutdown() EXCLUDES(mu_);

  BatchRunnerStats stats() const EXCLUDES(mu_);
  const BatchRunnerOptions& options() const { return opts_; }

 private:
  struct Active;
  void Loop() EXCLUDES(mu_);
  // Under mu_: moves the jobs the admission rule lets in from waiting_ to running_; `outside`: the
  // budget's bytes outside the reservations, read before the lock.
  std::vector<std::shared_ptr<Active>> AdmitLocked(int running, int64_t outside) REQUIRES(mu_);
  // Run()'s wait for its job's release: polls cancellation while queued and makes room while refused.
  void AwaitRelease(const std::shared_ptr<Active>& a) REQUIRES(mu_);
  // What the budget may hold outside the reservations for `kv_bytes` more to fit; < 0: cannot fit now.
  int64_t OutsideRoomLocked(int64_t kv_bytes) const REQUIRES(mu_);
  int64_t OutsideBytes() const;
  void NoteTurnLocked(const StepLoop& loop, const std::vector<std::shared_ptr<GenSequence>>& released)
      REQUIRES(mu_);

  Engine& engine_;
  BatchRunnerOptions opts_;
  Env* env_;
  mutable Mutex mu_;
  CondVar cv_;  // work arrived, a job finished, or stopping
  std::vector<std::shared_ptr<Active>> waiting_ GUARDED_BY(mu_);  // FIFO, not yet given a slot
  std::vector<std::shared_ptr<Active>> running_ GUARDED_BY(mu_);  // holding slots, admission order
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  BatchRunnerStats st_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ember
