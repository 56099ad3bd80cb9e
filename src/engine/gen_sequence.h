// One sequence's generation inside the step loop (engine/step_loop.h): its sampler, drafter, pending
// token and result, and THE per-token rule — sample a row, accept it into the grammar and the penalty
// window, report it, check the stop rules — plus the speculative draft walk. Serial generation
// (Engine::Generate) and batched generation (BatchRunner) both run sequences through this one class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/drafter.h"
#include "engine/engine.h"
#include "util/env.h"

namespace ember {

// What a caller asks the step loop for: one sequence's generation.
struct BatchJob {
  Sequence* seq = nullptr;               // the caller's; holds prompt[0, seq->n_pos()) already (e.g. a cache view)
  std::span<const int32_t> prompt;       // the WHOLE prompt; seq->tokens() is a prefix of it; must outlive the run
  GenerateOptions options;               // max_tokens, sampling, cancel, top_logprobs, on_logprobs, stop_at_eog
  std::string share_key;                 // sequences with equal non-empty keys may share in-flight prefixes
  int64_t kv_bytes = 0;                  // KV this job reserves while it holds a slot (admission; 0: none)
  // On Run()'s caller thread, never the step thread (it may write to disk): shrink what the KV budget
  // holds besides the running jobs' reservations (the RAM prompt cache) to at most `outside_bytes`, so
  // this job fits. Called before the job is queued and on every memory poll while it waits for memory.
  std::function<void(int64_t outside_bytes)> make_room;
  // Step thread, once: after the last prompt position is forwarded, before the first token is sampled
  // (the session layer stores its prompt-boundary cache entry here).
  std::function<void(const Sequence&)> on_prompt_done;
  // Prompt positions (ascending, inside the prompt) where a prompt chunk must end so the caller can keep
  // the state there (a hybrid's recurrent state exists only where a chunk ends; docs/hybrid.md): after
  // the chunk that reaches one, on_checkpoint runs on the step thread with the sequence at that position.
  std::vector<int64_t> checkpoints;
  std::function<void(const Sequence&)> on_checkpoint;
  TokenCallback on_token;                // step thread; return false to stop (kCallback)
};

struct BatchJobResult {
  GenerateResult gen;            // prompt_tokens = positions this job forwarded
  int64_t shared_tokens = 0;     // prompt positions adopted from another running sequence (not computed)
  double queued_s = 0;           // submitted -> admitted to a step slot
  // This job's share of the steps that forwarded its prompt: each step's time split by rows. A prefill
  // rate for estimates (the cold tier's restore-or-recompute choice); gen.prefill_s is wall time, which
  // under load includes the queue and the other sequences' rows.
  double prefill_compute_s = 0;
};

// Checks a job before it is queued: InvalidArgument for an empty prompt, a sequence that is not a
// strict prefix of it, bad sampling or speculative options, or top_logprobs out of range.
Status ValidateJob(const BatchJob& job);

class GenSequence {
 public:
  GenSequence(BatchJob job, Env* env);

  // Called when the sequence gets a slot: the sampler (it sees the whole prompt) and, when `drafting`,
  // the drafter. A failure finishes the sequence with that error.
  void Begin(const Engine& engine, uint64_t order, bool drafting);

  // Works toward the grammar mask of its next sample, at most about `max_work` units
  // (grammar/mask_budget.h); false: not ready (or the budget is spent: the sequence failed).
  bool MaskReady(uint64_t max_work);
  // Decoding: the pending token plus up to min(draft_room, the pacer's pick) drafted tokens.
  void BuildDecodeSlice(int draft_room, int64_t n_ctx);
  // After a step, decoding: its rows' logits (row i verifies the i-th draft). The walk samples rows in
  // order until a stop or a rejected draft, then cuts off the positions past it. Returns drafts accepted.
  int64_t OnDecodeRows(const float* rows, int64_t n_vocab);
  // After a step whose chunk ended the prompt: on_prompt_done, then the first sample.
  void OnPromptDone(const float* logits);
  // A prompt chunk of `rows` went through (their share of the step: `compute_s`); on_checkpoint if the
  // sequence now stands at one of its checkpoints.
  void OnPromptRows(int64_t rows, double compute_s);
  // Prefilling: rows up to its next checkpoint after n_pos (0: none left).
  int64_t RowsToCheckpoint() const;

  void Cancel();                           // finishes as kCancelled
  void Fail(Status st);                    // finishes with that error
  bool cancel_requested() const;
  // Sets the wall-time fields of a sequence leaving the loop.
  void Release();
  // Runs fn; an exception it throws fails this sequence only (callbacks are the caller's code).
  void Guarded(const std::function<void()>& fn);

  const BatchJob& job() const { return job_; }
  Sequence& seq() const { return *job_.seq; }
  uint64_t order() const { return order_; }
  int64_t prompt_len() const { return static_cast<int64_t>(job_.prompt.size()); }
  bool decoding() const { return decoding_; }
  bool finished() const { return finished_; }
  const Status& status() const { return status_; }
  std::span<const int32_t> decode_tokens() const { return verify_; }
  int64_t draft_rows() const { return static_cast<int64_t>(verify_.size()) - 1; }
  BatchJobResult& result() { return result_; }
  const BatchJobResult& result() const { return result_; }
  int64_t submitted_us() const { return start_us_; }

 private:
  void Finish(StopReason stop);
  void Sample(const float* logits, int32_t draft);  // the per-token rule
  double Since(int64_t from_us) const;

  BatchJob job_;
  Env* env_;
  const Tokenizer* tokenizer_ = nullptr;
  uint64_t order_ = 0;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Drafter> drafter_;       // speculative decoding (null when off)
  std::unique_ptr<DraftPacer> pacer_;
  std::vector<int32_t> verify_;            // this step's decode slice: pending + drafts
  int64_t base_ = 0;                       // positions held before that slice
  int32_t pending_ = 0;
  bool decoding_ = false;
  bool finished_ = false;
  int64_t start_us_ = 0, prompt_done_us_ = 0;
  BatchJobResult result_;
  Status status_;
  TokenLogprobs lp_;
};

}  // namespace ember
