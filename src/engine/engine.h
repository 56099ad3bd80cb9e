// The session API the prompt cache and the server build on: load a model once, create sequences
// (each with its own KV state), prefill in ubatch chunks, decode one token at a time, sample, stop on
// end-of-generation, stream tokens through a callback, cancel.
//
// Thread-safety:
//  * Engine: the model and tokenizer are read-only and shared by all sequences. Prefill/Decode/
//    Evaluate/Generate may be called from any thread; calls are serialised on the engine's thread pool
//    (one forward pass at a time uses all the cores).
//  * Sequence: driven by one thread at a time. Different sequences (and their KV views) may be used
//    from different threads.
//
// Determinism: logits are bitwise independent of how a token sequence is split into ubatches (prefill
// chunk vs decode step), so a sequence adopted from a cached KV view and continued gives bitwise the
// logits and tokens of one computed from scratch (docs/cache-spec.md §6).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "engine/speculative_options.h"
#include "engine/step_context.h"
#include "engine/weight_pages.h"
#include "grammar/token_constraint.h"
#include "kernels/thread_pool.h"
#include "kv/kv_state.h"
#include "model/forward.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/env.h"
#include "util/mutex.h"
#include "util/progress.h"

namespace ember {

struct EngineOptions {
  int threads = 0;               // 0: physical cores
  KvDtype kv_dtype = KvDtype::kF16;
  int64_t ubatch = 512;          // default prefill chunk
  int64_t n_ctx = 0;             // max positions per sequence; 0: min(context_length, 32768)
  int32_t kv_block_size = 32;
  bool load_tokenizer = true;    // false: ids only (no tokenizer keys needed)
  bool prefault_weights = true;  // map the weight pages at load (overlapped with the tokenizer build)
  bool huge_pages = true;        // ... on 2 MiB pages where the kernel can (engine/weight_pages.h)
  // Repack the matmul weights the CPU has packed GEMM kernels for (AVX-512 VNNI: Q8_0, Q4_0, Q4_K,
  // Q5_K, Q6_K) into private copies that replace their mapped pages (Model::PackWeights; results are bitwise
  // the same, prefill is faster). EMBER_REPACK=0 in the environment turns it off too.
  bool repack_weights = true;
  Env* env = nullptr;            // clock for the timings Generate reports; null: Env::Default()
  // Load's progress: bytes of weights mapped in by the prefault, per 64 MiB (reading them from disk is
  // most of a cold load). Not called when nothing is prefaulted. Optional.
  ProgressFn load_progress;
};

// One sequence's state: the tokens forwarded so far and their KV, plus its activation buffers.
class Sequence {
 public:
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t n_pos() const { return kv_.n_pos(); }
  const KvState& kv() const { return kv_; }
  // Replaces the state (e.g. with a prompt-cache view); tokens.size() must equal state.n_pos() and
  // the state's geometry must match this model's.
  Status Adopt(KvState state, std::vector<int32_t> tokens);
  // Cuts the state back to p positions (see KvState::TrimTo).
  Status TrimTo(int64_t p);
  // Logits of the last token forwarded by Prefill/Decode/Evaluate (n_vocab floats), valid until the next
  // forward; null before the first one. (A batched Step leaves them in its StepContext instead.)
  const float* last_logits() const { return fwd_ ? fwd_->logits() : nullptr; }
  OpTimes& op_times();

 private:
  friend class Engine;
  Sequence(KvState kv, const Model& model, const ForwardOptions& fo) : kv_(std::move(kv)), model_(model), fo_(fo) {}
  ForwardContext& fwd();
  KvState kv_;
  std::vector<int32_t> tokens_;
  const Model& model_;
  ForwardOptions fo_;
  // Activation buffers for forwarding this sequence alone, made on first use: a sequence driven only by
  // batched steps (the batch runner's) never needs them, and they are tens of MB at a 512-token ubatch.
  std::unique_ptr<ForwardContext> fwd_;
};

enum class StopReason { kEog, kLength, kCancelled, kCallback };
const char* StopReasonName(StopReason r);

struct GenerateOptions {
  int64_t max_tokens = 128;
  SamplerParams sampling;
  int64_t ubatch = 0;                        // 0: the engine's default
  const std::atomic<bool>* cancel = nullptr;  // checked between ubatches and tokens
  bool stop_at_eog = true;
  // Log-probabilities of the generated tokens (OpenAI `logprobs` / `top_logprobs`): -1 off; 0 the
  // sampled token's logprob only; 1..kMaxTopLogprobs (20) also that many most likely alternatives.
  // The distribution is the log-softmax over the vocabulary after logit bias and penalties, before
  // truncation and temperature (sampler.h). Costs one vectorised exp pass over the vocabulary per token.
  int top_logprobs = -1;
  // With top_logprobs >= 0: called with each token's logprobs just before on_token sees that token
  // (same thread). Lets a caller that only forwards GenerateOptions (e.g. the prompt cache's
  // CachedSession) stream logprobs without changing its token callback.
  std::function<void(const TokenLogprobs&)> on_logprobs;
  // Grammar-constrained sampling (docs/grammar.md): borrowed, one sequence's, null = free. The sampler
  // masks the logits with it after logit bias and penalties (so logprobs are over the allowed tokens),
  // and every sampled token is Accepted. A token it refuses (no token of the vocabulary can continue the
  // grammar) ends the generation with that InvalidArgument error. End-of-generation tokens are allowed
  // only once it is Complete(); when nothing but the end can follow (OnlyEndCanFollow), generation stops
  // with StopReason::kEog without sampling one more token. Must outlive the call.
  grammar::TokenConstraint* constraint = nullptr;
  // Speculative decoding (docs/speculative.md): off by default. Lossless: greedy output is bitwise the
  // same, sampled output has the same distribution; stop rules, logprobs and constraints unchanged.
  SpeculativeOptions speculative;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated, including a final end-of-generation token
  StopReason stop = StopReason::kLength;
  int64_t prompt_tokens = 0;    // tokens prefilled by this call
  double prefill_s = 0;         // prompt prefill (incl. the first logits)
  double ttft_s = 0;            // call start -> first token sampled
  double decode_s = 0;          // forwarding the generated tokens
  int64_t decode_tokens = 0;
  // With top_logprobs >= 0: one entry per element of `tokens`, same order (logprobs[i].token == tokens[i]).
  std::vector<TokenLogprobs> logprobs;
  // Speculative decoding: tokens drafted and verified, how many of them were accepted (emitted), and in
  // how many drafts (verifications that carried any).
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  int64_t drafts = 0;
};

// Called with each generated token as soon as it is sampled; return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

class Engine {
 public:
  static StatusOr<std::unique_ptr<Engine>> Load(const std::string& path, const EngineOptions& options);

  const Model& model() const { return *model_; }
  // Null when loaded with load_tokenizer = false.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const EngineOptions& options() const { return opts_; }
  int threads() const { return opts_.threads; }  // the pool's size: Load made the pool with it
  KvConfig kv_config() const { return model_->MakeKvConfig(opts_.kv_dtype, opts_.kv_block_size); }
  // How Load placed the weight pages (all zero for a model too large to populate).
  const WeightPages& weight_pages() const { return weight_pages_; }

  // all_logits: the sequence can Evaluate (logits for every position; more memory).
  StatusOr<std::unique_ptr<Sequence>> NewSequence(bool all_logits = false) const;

  // Forwards `tokens` after the sequence's state in chunks of `ubatch` (0: default); returns the
  // logits of the last one. `*cancel` is checked before each chunk: once it is set, Prefill returns
  // null (not an error: the client left, nothing went wrong). On error or cancellation the sequence
  // holds the chunks already done.
  StatusOr<const float*> Prefill(Sequence& seq, std::span<const int32_t> tokens, int64_t ubatch = 0,
                                 const std::atomic<bool>* cancel = nullptr);
  StatusOr<const float*> Decode(Sequence& seq, int32_t token);
  // Teacher-forced: forwards tokens and appends every position's logits (n × n_vocab) to *out.
  // Needs a sequence made with all_logits.
  Status Evaluate(Sequence& seq, std::span<const int32_t> tokens, int64_t ubatch, std::vector<float>* out);
  // Prefills `prompt`, then samples up to max_tokens, forwarding each token but the last one: one
  // sequence through the step loop on this thread (engine/step_loop.h RunAlone), so it samples exactly as
  // a sequence of the batch runner does. Leaves last_logits() as it was (the step keeps its own logits).
  StatusOr<GenerateResult> Generate(Sequence& seq, std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const TokenCallback& on_token);

  // A context for Step with room for max_tokens rows, max_seqs slices and max_logit_rows logit rows
  // (0: max_seqs) per step.
  std::unique_ptr<StepContext> NewStepContext(int64_t max_tokens, int max_seqs, int64_t max_logit_rows = 0) const;
  // One forward pass over several sequences (engine/step_context.h): slice i forwards its tokens after
  // its sequence's state; (*status)[i] says how it went — a slice that cannot run (context full, bad
  // token id, KV allocation) fails alone and its sequence is unchanged. Each sequence's KV and logits
  // are bitwise those of forwarding it alone (batch invariance). The returned Status is an error only
  // for a malformed step (too many rows or slices, one sequence twice); then nothing ran.
  Status Step(StepContext& ctx, std::span<const StepSlice> slices, std::vector<Status>* status) EXCLUDES(pool_mu_);

 private:
  Engine() = default;
  Status Forward(Sequence& seq, std::span<const int32_t> tokens, LogitsMode mode) EXCLUDES(pool_mu_);

  EngineOptions opts_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  WeightPages weight_pages_;
  Mutex pool_mu_;  // one forward pass at a time: the pool has one owner thread (kernels/thread_pool.h)
  std::unique_ptr<kernels::ThreadPool> pool_ PT_GUARDED_BY(pool_mu_);
};

}  // namespace ember
