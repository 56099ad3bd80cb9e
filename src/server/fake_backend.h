// A deterministic InferenceBackend that needs no model: the backend of `ember serve --fake` and of the
// server's tests. It stays in the shipped binary on purpose: the e2e tests drive the HTTP stack through
// the binary users run (flags, signals, drain, transport limits), and client developers can test an
// integration (both SDKs, streaming, tool calls) without a model file (docs/server.md, "--fake").
//
//   * Tokens are bytes (id = byte value); id 256 is BOS, added when add_special is set.
//   * The chat template renders each message as "<|role|>content\n", tools as one "<|tools|>" line and
//     the generation prompt as "<|assistant|>".
//   * Generation: if the prompt contains "echo:", the reply is the text after the last "echo:" up to the
//     next "<|" (so tests script the exact output, tool-call markup included), cut into 3-byte pieces.
//     Otherwise it is 8..15 pseudo-random words chosen by the seed (or by the prompt when no seed is
//     given); a prompt containing "[long]" makes the words go on until max_tokens.
//   * It ignores GenerationRequest::grammar (structured output, forced tool calls): its bytes are not a
//     model's vocabulary, and tests script the exact output with "echo:". Grammar-constrained sampling
//     is tested on the real engine (tests/engine, tests/e2e grammar test). Its tool_call_syntax() is
//     kHermes (<tool_call> blocks, unambiguous in a scripted reply).
//   * It has no prompt cache: cached_tokens is always 0 (tier "none") and Stats() reports no cache tier.
//     What the cache does is tested on the real engine with a small generated model (engine_backend
//     tests, tests/e2e/real_model, ssd, tenancy), never on this fake.
//   * Lanes and memory admission, so the scheduler's side is testable without a model: `max_parallel`
//     Generate() calls may run at once; with `kv_budget_tokens` > 0 each call needs prompt + max_tokens
//     tokens of it until it returns. Like the engine's runner, Generate admits in its own FIFO queue
//     (a ticket per call; no call overtakes an earlier waiting one): the oldest waiting call is
//     re-checked when a generation ends and every kAdmissionPollMicros of `env` (memory can come back
//     unsignalled: set_kv_outside_tokens), and a call cancelled while waiting returns kCancelled within
//     one poll. memory_waits(): `waiting` is 1 while the oldest waiting call is refused (and not
//     cancelled), `waits` counts calls refused at least once; the `admissions_refused` batch value
//     counts every refused check of the oldest call (each re-check). CheckAdmissible refuses
//     (InvalidArgument naming the numbers) a request larger than the whole budget; Generate too.
// Thread-safe per the InferenceBackend contract; Generate() may run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "server/backend.h"
#include "util/env.h"
#include "util/mutex.h"

namespace ember::server {

class FakeBackend final : public InferenceBackend {
 public:
  struct Options {
    std::string model_id = "ember-fake";
    int32_t context_length = 4096;
    int token_delay_ms = 0;  // sleep per token, so tests can disconnect or queue mid-generation
    int max_parallel = 1;    // Generate() calls that may run at once (`ember serve --fake`: --parallel)
    int64_t kv_budget_tokens = 0;  // 0 = no budget; else the sum of running prompt + max_tokens
    Env* env = nullptr;      // the admission poll's clock (tests: a simulated one); null: Env::Default()
  };
  // How often a call waiting for memory re-checks (and its cancel flag), besides every generation end.
  static constexpr int64_t kAdmissionPollMicros = 50'000;
  FakeBackend() : FakeBackend(Options{}) {}
  explicit FakeBackend(Options options);

  std::string model_id() const override { return options_.model_id; }
  int32_t context_length() const override { return options_.context_length; }
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& text, bool add_special,
                                          bool parse_special) const override;
  StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids) const override;
  StatusOr<std::string> ApplyChatTemplate(const ChatTemplateInput& input) const override;
  // Byte tokens have no control tokens to forge: the rendered text's bytes.
  StatusOr<std::vector<int32_t>> TokenizeChat(const ChatTemplateInput& input) const override;
  Status Generate(const GenerationRequest& req, const TokenCallback& on_token,
                  GenerationResult* out) override;
  BackendStats Stats() const override;
  ToolCallSyntax tool_call_syntax() const override { return ToolCallSyntax::kHermes; }
  int max_parallel() const override { return options_.max_parallel < 1 ? 1 : options_.max_parallel; }
  Status CheckAdmissible(const GenerationRequest& req) const override;
  MemoryWaits memory_waits() const override;
  Status FlushCache() override;  // nothing to flush; counted, so tests see the admin route and shutdown call it

  // Test hooks. Hold() makes every Generate() wait (still honouring cancel) until Release().
  void Hold();
  void Release();
  // A call cancelled while waiting for memory never started: it counts in neither generations_started
  // nor cancelled_generations.
  int generations_started() const;        // admitted Generate() calls
  int running_generations() const;        // admitted and inside Generate() now
  int peak_running_generations() const;   // the most ever admitted and inside Generate() at once
  int64_t kv_used_tokens() const;         // budget held by admitted calls
  std::vector<std::string> admission_order() const;  // admitted calls' prompts (as bytes), in order
  // KV the budget holds outside the generations (the engine's RAM cache). Changing it wakes no waiting
  // call: only the poll sees memory it frees.
  void set_kv_outside_tokens(int64_t tokens);
  int cancelled_generations() const;
  int flush_count() const;
  GenerationRequest last_request() const;  // `cancel` is not meaningful in the copy

  static constexpr int32_t kBos = 256;

 private:
  struct KvWaiter {
    uint64_t ticket = 0;
    const std::atomic<bool>* cancel = nullptr;
  };
  // Waits in the FIFO until `need` tokens fit, then holds them; false when cancelled meanwhile.
  bool AwaitKv(const GenerationRequest& req, int64_t need) EXCLUDES(mu_);
  void StartGeneration(const GenerationRequest& req) EXCLUDES(mu_);
  bool WaitWhileHeld(const GenerationRequest& req) EXCLUDES(mu_);
  void ReleaseKv(int64_t tokens) EXCLUDES(mu_);

  const Options options_;
  mutable Mutex mu_;
  CondVar held_cv_;
  CondVar kv_cv_;  // a generation ended (its tokens came back) or the queue's head changed
  bool held_ GUARDED_BY(mu_) = false;
  GenerationRequest last_request_ GUARDED_BY(mu_);
  int generations_ GUARDED_BY(mu_) = 0;
  int cancelled_ GUARDED_BY(mu_) = 0;
  int flushes_ GUARDED_BY(mu_) = 0;
  int64_t tokens_generated_ GUARDED_BY(mu_) = 0;
  int running_ GUARDED_BY(mu_) = 0;
  int peak_running_ GUARDED_BY(mu_) = 0;
  int64_t kv_used_ GUARDED_BY(mu_) = 0;
  uint64_t admitted_ GUARDED_BY(mu_) = 0;
  uint64_t refused_ GUARDED_BY(mu_) = 0;        // refused checks of the waiting head (one per re-check)
  int64_t kv_outside_ GUARDED_BY(mu_) = 0;
  std::deque<KvWaiter> kv_queue_ GUARDED_BY(mu_);  // calls waiting for memory, oldest first
  uint64_t next_ticket_ GUARDED_BY(mu_) = 0;
  bool head_refused_ GUARDED_BY(mu_) = false;   // kv_queue_.front() was refused at least once
  uint64_t memory_waits_ GUARDED_BY(mu_) = 0;   // calls refused at least once
  std::vector<std::string> admission_order_ GUARDED_BY(mu_);
  std::vector<LaneStats> lanes_ GUARDED_BY(mu_);  // one per lane
};

}  // namespace ember::server
