// Continuous batching (issue #16): up to `max_seqs` sequences advance together, one forward pass
// (Engine::Step) per step over the decode token of every running sequence plus a budgeted chunk of
// prompt tokens of sequences being admitted, so a long prompt never holds up the others' streams for
// more than one chunk.
//
// Each Run() call is one sequence's generation, with exactly the semantics of Engine::Generate (same
// sampler, same RNG use, same stop rules, logprobs, cancellation, speculative decoding), and because the
// forward pass is batch invariant its tokens and logits are bitwise those of running it alone (the
// tests compare). A speculating sequence's decode slice carries its pending token and its drafts.
//
// Grammar masks (grammar/mask_budget.h): before each step a constrained sequence spends at most
// kMaskStepWork units on its next mask; one not ready by then sits the step out (its pending token
// waits; a prompt keeps its last row back) and goes on next step, so a costly grammar slows only its own
// sequence. A drafted row is verified only when its mask is ready already. Engine::Generate follows the
// same rule for drafts, so the tokens are still those of a solo run.
//
// In-flight prefix sharing: a sequence whose prompt shares a prefix with a sequence admitted before it
// (same share_key) does not compute that prefix again. While the earlier one is still prefilling the
// shared part the later one waits; once the earlier one holds it, the later one adopts a zero-copy view
// of its KV (copy-on-write blocks) and prefills only the rest. Waiting follows admission order, so there
// is no cycle. The view is positions computed from the same tokens, so the result is unchanged.
//
// Threading: Run() is called from any number of threads (the server's lanes) and blocks until that
// generation ends; at most max_seqs run at once, later calls wait their turn (FIFO). One step thread
// owns the StepContext and calls Engine::Step; on_token and on_prompt_done run on it and must be cheap
// (they sit between two forward passes of every running sequence).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
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
};

struct BatchJob {
  Sequence* seq = nullptr;               // the caller's; holds prompt[0, seq->n_pos()) already (e.g. a cache view)
  std::span<const int32_t> prompt;       // the WHOLE prompt; seq->tokens() is a prefix of it; must outlive Run
  GenerateOptions options;               // max_tokens, sampling, cancel, top_logprobs, on_logprobs, stop_at_eog
  std::string share_key;                 // sequences with equal non-empty keys may share in-flight prefixes
  // Step thread, once: after the last prompt position is forwarded, before the first token is sampled
  // (the session layer stores its prompt-boundary cache entry here).
  std::function<void(const Sequence&)> on_prompt_done;
  TokenCallback on_token;                // step thread; return false to stop (kCallback)
};

struct BatchJobResult {
  GenerateResult gen;            // as Engine::Generate's; prompt_tokens = positions this job forwarded
  int64_t shared_tokens = 0;     // prompt positions adopted from another running sequence (not computed)
  double queued_s = 0;           // Run() call -> admitted to a step slot
  // This job's share of the steps that forwarded its prompt: each step's time split by rows. A prefill
  // rate for estimates (the cold tier's restore-or-recompute choice); gen.prefill_s is wall time, which
  // under load includes the queue and the other sequences' rows.
  double prefill_compute_s = 0;
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
  double step_seconds = 0;       // Σ step wall time (forward + sampling)
  double last_step_ms = 0;
  uint64_t completed = 0, failed = 0, cancelled = 0;
};

class BatchRunner {
 public:
  BatchRunner(Engine& engine, BatchRunnerOptions options);
  ~BatchRunner();  // Shutdown()
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // One generation, blocking. Errors: InvalidArgument for a bad job (empty prompt, seq not a prefix of
  // it, bad sampling params), FailedPrecondition after Shutdown, or the step's error for this sequence
  // (it alone fails; the others go on). Cancellation (options.cancel) is not an error: stop kCancelled.
  StatusOr<BatchJobResult> Run(BatchJob job) EXCLUDES(mu_);

  // Cancels nothing by itself: waits for running and queued jobs to end (callers cancel them through
  // their flags), then stops the step thread. Later Run() calls fail.
  void Shutdown() EXCLUDES(mu_);

  BatchRunnerStats stats() const EXCLUDES(mu_);
  const BatchRunnerOptions& options() const { return opts_; }

 private:
  struct Active;
  void StepLoop() EXCLUDES(mu_);

  Engine& engine_;
  BatchRunnerOptions opts_;
  Env* env_;
  mutable Mutex mu_;
  CondVar cv_;  // work arrived, a job finished, or stopping
  std::vector<std::shared_ptr<Active>> waiting_ GUARDED_BY(mu_);  // FIFO, not yet given a slot
  std::vector<std::shared_ptr<Active>> active_ GUARDED_BY(mu_);   // admission order
  bool stopping_ GUARDED_BY(mu_) = false;
  BatchRunnerStats st_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ember
