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
//   * Lanes and admission, so the scheduler's are testable without a model: `max_parallel` Generate()
//     calls may run at once; with `kv_budget_tokens` > 0 each request needs prompt + max_tokens tokens
//     of it while it runs — TryAdmit refuses (null) what would overrun it, CheckAdmissible refuses
//     (InvalidArgument naming the numbers) a request larger than the whole budget.
// Thread-safe per the InferenceBackend contract; Generate() may run concurrently.
#pragma once

#include <memory>
#include <vector>

#include "server/backend.h"
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
  };
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
  std::unique_ptr<Admission> TryAdmit(const GenerationRequest& req) override;
  Status FlushCache() override;  // nothing to flush; counted, so tests see the admin route and shutdown call it

  // Test hooks. Hold() makes every Generate() wait (still honouring cancel) until Release().
  void Hold();
  void Release();
  int generations_started() const;
  int running_generations() const;        // inside Generate() now
  int peak_running_generations() const;   // the most ever inside Generate() at once
  int64_t kv_used_tokens() const;         // budget held by live Admissions
  int cancelled_generations() const;
  int flush_count() const;
  GenerationRequest last_request() const;  // `cancel` is not meaningful in the copy

  static constexpr int32_t kBos = 256;

 private:
  class FakeAdmission;
  bool WaitWhileHeld(const GenerationRequest& req) EXCLUDES(mu_);
  void ReleaseKv(int64_t tokens) EXCLUDES(mu_);

  const Options options_;
  mutable Mutex mu_;
  CondVar held_cv_;
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
  uint64_t refused_ GUARDED_BY(mu_) = 0;
  std::vector<LaneStats> lanes_ GUARDED_BY(mu_);  // one per lane
};

}  // namespace ember::server
