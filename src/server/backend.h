// The seam between the HTTP layer and an inference engine. The server parses every request into the
// native types below at its edge and talks to the engine only through `InferenceBackend`, so the engine
// never sees JSON from a client and the server never sees a tensor.
//
// Thread-safety contract (the server relies on it):
//   * model_id(), context_length(), Tokenize(), Detokenize(), ApplyChatTemplate() and Stats() may be
//     called concurrently from any HTTP worker thread, also while Generate() runs.
//   * Generate() is called from at most max_parallel() threads at once (the scheduler's lanes); with
//     max_parallel() == 1, from one thread at a time. Memory admission happens inside Generate (the
//     backend's one queue: a call whose KV does not fit yet waits there, in arrival order, and returns
//     kCancelled promptly if its request is cancelled meanwhile); memory_waits() reports it.
//   * FlushCache() may be called concurrently with anything; it makes the prefix cache durable.
// No method throws; errors are values (util/status.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "server/tool_call_syntax.h"
#include "util/status.h"

namespace ember::server {

// One call of a tool, as the OpenAI API shapes it. `arguments_json` is the JSON text of the arguments
// object (kept as text: its schema belongs to the caller's tool, not to ember).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;
};

// One chat turn. role is "system", "user", "assistant" or "tool". Content parts have already been
// flattened to text. An assistant turn may carry tool_calls; a tool turn answers `tool_call_id`.
struct ChatMessage {
  std::string role;
  std::string content;
  std::vector<ToolCall> tool_calls;
  std::string tool_call_id;
  std::string name;
  // An assistant turn's earlier reasoning (Anthropic thinking blocks, OpenAI reasoning_content): handed to
  // the template as `reasoning_content`; templates that render it (Qwen3's <think>) show it, others drop it.
  std::string reasoning_content = {};  // (initialized: the many {role, content, ...} literals stay valid)
};

// A function the model may call. `parameters_json` is the JSON Schema text of its arguments.
struct ToolSpec {
  std::string name;
  std::string description;
  std::string parameters_json;
};

struct ChatTemplateInput {
  std::vector<ChatMessage> messages;
  std::vector<ToolSpec> tools;
  bool add_generation_prompt = true;
  // Extra template variables (`chat_template_kwargs`, e.g. enable_thinking), name -> JSON text of value.
  std::vector<std::pair<std::string, std::string>> kwargs_json;
  // > 0: TokenizeChat may refuse (InvalidArgument, PromptBytesTooLong's message) a rendered prompt whose
  // byte length alone proves it needs more tokens than this, before spending the time to tokenize it.
  int64_t token_limit = 0;
};

// The fewest tokens `bytes` of text can become when no token stands for more than `max_token_bytes` of
// it (0: unknown, so no bound).
inline int64_t MinTokensForBytes(size_t bytes, size_t max_token_bytes) {
  return max_token_bytes == 0 ? 0 : static_cast<int64_t>((bytes + max_token_bytes - 1) / max_token_bytes);
}
// The 400's message for a prompt refused on its byte length (no token count is known: none was made).
inline std::string PromptBytesTooLong(size_t bytes, int64_t min_tokens, int64_t token_limit, int64_t n_ctx) {
  return "the prompt (" + std::to_string(bytes) + " bytes, so at least " + std::to_string(min_tokens) +
         " tokens) does not fit the context length (" + std::to_string(n_ctx) + " tokens, " +
         std::to_string(token_limit) + " of them for the prompt)";
}

struct SamplingParams {
  float temperature = 1.0f;          // 0 = greedy
  float top_p = 1.0f;
  int32_t top_k = 0;                 // 0 = off
  float min_p = 0.0f;
  std::optional<uint64_t> seed;      // absent: the engine picks one
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;   // 1 = off
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias added to its logit
};

struct GenerationRequest {
  std::vector<int32_t> prompt;       // already templated and tokenized
  SamplingParams sampling;
  int32_t max_tokens = 0;            // > 0; the server checks prompt + max_tokens <= context_length()
  int32_t top_logprobs = 0;          // 0..20; logprobs of the chosen token are reported when `logprobs`
  bool logprobs = false;
  // Separates prefix-cache namespaces: requests with different salts never share cached KV. The server
  // puts CacheNamespace::TenantOf(API key identity, the client's cache_salt) here: a digest, so neither a
  // key nor a client's salt reaches the cache or its files.
  std::string cache_salt;
  // The scheduler lane running it (0..max_parallel()-1; -1 outside the scheduler): per-lane stats.
  int32_t lane = -1;
  // Set by the server when the client went away or the server is shutting down; Generate() polls it
  // between tokens and returns promptly (finish reason kCancelled). Outlives the Generate() call.
  const std::atomic<bool>* cancel = nullptr;
  // Constrains the output to the grammar's sentences (structured output, forced tool calls); null: free.
  // The backend binds it to its vocabulary, one matcher per generation.
  std::shared_ptr<const grammar::Grammar> grammar;
};

struct TokenLogprob {
  int32_t id = 0;
  std::string piece;
  float logprob = 0.0f;
};

// One generated token. `piece` is its decoded text; it may end inside a UTF-8 sequence (byte tokens), the
// server reassembles. Stop tokens (EOS, <|eot_id|>) are NOT reported: Generate() ends instead.
struct TokenEvent {
  int32_t id = 0;
  std::string piece;
  float logprob = 0.0f;                  // valid when the request asked for logprobs
  std::vector<TokenLogprob> top_logprobs;
};

// Called on the generation thread for every token; returns false to stop generation now (the server
// matched a stop string). Must be cheap: it runs between decode steps.
using TokenCallback = std::function<bool(const TokenEvent&)>;

enum class FinishReason { kStop, kLength, kCancelled };

struct GenerationResult {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;         // prompt tokens whose KV came from the prefix cache
  std::string cache_tier = "none";   // where they came from: "ram", "ssd" or "none"
  int32_t completion_tokens = 0;
  FinishReason finish_reason = FinishReason::kStop;
  double prefill_ms = 0;             // includes cache restore
  double decode_ms = 0;
  // Speculative decoding (docs/speculative.md): tokens drafted and verified, how many were accepted, and
  // in how many drafts.
  int32_t draft_tokens = 0;
  int32_t draft_accepted = 0;
  int32_t drafts = 0;
};

// A named value from the engine or one cache tier. Monotonic values are Prometheus counters, the others
// gauges (entries, bytes, cap, write-queue bytes, ...).
struct StatValue {
  std::string name;  // snake_case, e.g. "hits", "restore_failures"
  double value = 0;
  bool monotonic = true;
};

// A histogram snapshot with cumulative bucket counts (Prometheus' `le` convention).
struct HistogramValue {
  std::string name;                  // e.g. "restore_ms"
  std::vector<double> upper_bounds;  // ascending, +Inf implied
  std::vector<uint64_t> cumulative_counts;  // same size as upper_bounds
  uint64_t count = 0;
  double sum = 0;
};

struct CacheTierStats {
  std::string tier;                  // "ram", "ssd"
  std::vector<StatValue> values;
  std::vector<HistogramValue> histograms;
};

// One scheduler lane's requests and what the prefix cache gave them.
struct LaneStats {
  int32_t lane = 0;
  uint64_t requests = 0;
  uint64_t cache_hits = 0;           // requests with cached_tokens > 0
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
};

struct BackendStats {
  std::string engine;                // e.g. "ember-cpu" or "fake"
  std::vector<StatValue> engine_values;
  std::vector<CacheTierStats> cache_tiers;
  // Continuous batching (empty when serial): running / prefilling / decoding / waiting sequences, steps,
  // tokens per step, step time, occupancy, shared in-flight prefix tokens, the KV budget and its use.
  std::vector<StatValue> batch_values;
  std::vector<LaneStats> lanes;
};

// Memory admission as the backend's queue sees it (/stats `queue`).
struct MemoryWaits {
  size_t waiting = 0;    // 0 or 1: the oldest waiting generation, refused for memory (FIFO keeps the rest behind it)
  uint64_t waits = 0;    // generations that had to wait for memory at least once
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  virtual std::string model_id() const = 0;
  // The model's chat template text (GGUF tokenizer.chat_template) for GET /props; "" when none.
  virtual std::string chat_template() const { return ""; }
  virtual int32_t context_length() const = 0;
  // The most bytes of prompt text one token can stand for (the longest vocabulary piece, and at least
  // one UTF-8 character); 0 when unknown. Lets a prompt too long for the context be refused unread.
  virtual size_t max_token_bytes() const { return 0; }
  virtual StatusOr<std::vector<int32_t>> Tokenize(const std::string& text, bool add_special,
                                                  bool parse_special) const = 0;
  virtual StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids) const = 0;
  // Renders the model's chat template (with tools in the model's own format) to prompt text.
  virtual StatusOr<std::string> ApplyChatTemplate(const ChatTemplateInput& input) const = 0;
  // The rendered chat prompt as token ids. The template's own markup keeps its control tokens; text from
  // the client (message content, names, tool calls and schemas, template kwargs) never becomes one: it
  // tokenizes as Tokenize(text, false, /*parse_special=*/false) would. Not the same as tokenizing
  // ApplyChatTemplate's text, where a user's "<|eot_id|>" could not be told from the template's.
  virtual StatusOr<std::vector<int32_t>> TokenizeChat(const ChatTemplateInput& input) const = 0;
  // Runs prefill (reusing the prefix cache) and decode; reports each token through `on_token`.
  // On error nothing is promised about `out` beyond prompt_tokens.
  virtual Status Generate(const GenerationRequest& req, const TokenCallback& on_token,
                          GenerationResult* out) = 0;
  virtual BackendStats Stats() const = 0;
  // How this model writes a tool call (from its chat template): the syntax a forced call is held to.
  virtual ToolCallSyntax tool_call_syntax() const { return ToolCallSyntax::kLlama3Json; }

  // ---- Continuous batching and memory admission (issue #16); the defaults are a serial backend ----
  // Generate() calls that may run at once; the scheduler runs this many lanes.
  virtual int max_parallel() const { return 1; }
  // Whether `req` could ever run here: InvalidArgument naming the numbers (its KV bytes against the
  // budget) when it cannot, so the server answers 400 instead of queueing it forever. HTTP thread.
  virtual Status CheckAdmissible(const GenerationRequest& req) const {
    (void)req;
    return Status::Ok();
  }
  // Whether a generation under `grammar` can start: InvalidArgument "grammar too costly: ..." when its
  // first mask already needs more work than the mask work budget's probe allows (docs/grammar.md), so
  // the server answers 400 before queueing it. HTTP thread.
  virtual Status CheckGrammar(const std::shared_ptr<const grammar::Grammar>& grammar) {
    (void)grammar;
    return Status::Ok();
  }
  // Generate() calls now waiting inside the backend for KV memory, and how many ever did. Any thread.
  virtual MemoryWaits memory_waits() const { return {}; }
  // Makes cached state durable (SSD tier) — called on shutdown and by POST /admin/cache/flush.
  virtual Status FlushCache() = 0;
};

}  // namespace ember::server
