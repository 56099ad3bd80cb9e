// The served arena (docs/bench-spec.md §2-3): ember's HTTP server measured from a client on loopback.
//
// Building blocks shared by `ember bench MODEL --served` and h2h's served and cache legs:
//   - ServerProcess: `ember serve MODEL --port 0` as a child in its own process group; start -> ready is
//     spawn -> first 200 from GET /health, polled every 10 ms;
//   - StreamCompletion: one streaming POST /v1/completions fed token ids (so every stack sees the same
//     ids), timed at the client: TTFT = sent -> first content chunk, served decode = (completion_tokens - 1)
//     / (first -> last content chunk), tokens and cached tokens from the final `usage`;
//   - a fixed 10-turn conversation, templated and tokenized once per model by ember's own server, then
//     replayed turn by turn as token ids (the prefix cache sees turn k's prompt as a prefix of turn k+1's);
//   - RunServedBench: direct vs served decode (interleaved rounds, each a fresh process, median of N),
//     start -> ready, and the TTFT of the conversation's last turn warm vs cold.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/stack_runner.h"
#include "util/progress.h"
#include "util/status.h"
#include "util/subprocess.h"

namespace ember::bench {

// What this ember's `serve` accepts (read from `ember serve --help`, so an older binary still runs).
struct ServeFlags {
  bool threads = false;    // --threads N
  bool ssd_cache = false;  // --ssd-cache DIR / --no-ssd-cache
  bool parallel = false;   // --parallel N (continuous batching: N sequences decode together)
};
ServeFlags ProbeServeFlags(const std::string& ember_binary);

struct ServeSpawn {
  std::string ember_binary;
  std::string model;
  int threads = 0;                  // passed as --threads when > 0 and the binary takes it
  std::vector<std::string> extra;   // more `ember serve` flags
  double ready_timeout_s = 300;     // spawn -> /health 200
};

class ServerProcess {
 public:
  static StatusOr<std::unique_ptr<ServerProcess>> Start(const ServeSpawn& spawn);
  // Any OpenAI-compatible server (llama-server): `argv` as given, listening on `port`, which the caller
  // chose and put in argv. Ready as `Start`: the first 200 from GET /health. `name` is for messages.
  static StatusOr<std::unique_ptr<ServerProcess>> StartCommand(const std::vector<std::string>& argv, int port,
                                                               double ready_timeout_s, const std::string& name);
  ~ServerProcess();  // SIGKILLs the process group if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  double ready_ms() const { return ready_ms_; }
  pid_t pid() const;
  int64_t PeakRssBytes() const;  // VmHWM of the live server, 0 when unreadable
  // GET /stats engine.values.threads, if the server reports it.
  std::optional<int> EngineThreads() const;
  // SIGTERM (the server drains and flushes its cache), SIGKILL after `grace_s`. The exit code, or an
  // error if it had to be killed.
  StatusOr<int> Stop(double grace_s = 60);
  std::string Log() const;  // its stdout + stderr so far (tail), for error messages

 private:
  ServerProcess() = default;
  // Spawns argv with its output in the log; port 0: read it from ember's "on http://HOST:PORT" line.
  static StatusOr<std::unique_ptr<ServerProcess>> Launch(std::vector<std::string> argv, int port,
                                                         double ready_timeout_s, std::string name);
  std::unique_ptr<Process> process_;
  std::string name_ = "ember serve";
  int port_ = 0;
  double ready_ms_ = 0;
  std::string log_path_;
};

struct CompletionTiming {
  double ttft_ms = 0, last_chunk_ms = 0, total_ms = 0;
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  bool cached_reported = false;  // usage.prompt_tokens_details.cached_tokens was present
  // llama-server's `timings` (prompt_n: prompt tokens it computed, cache_n: reused); -1 when absent.
  int timings_prompt_n = -1, timings_cache_n = -1;
  std::string cache_tier, finish_reason, text;
  // (completion_tokens - 1) / (first -> last content chunk); nullopt with fewer than 2 tokens.
  std::optional<double> DecodeTokS() const;
};

struct CompletionCall {
  std::vector<int32_t> prompt;       // token ids, sent as given (no BOS added)
  int max_tokens = 16;
  std::string cache_salt;            // separates cache namespaces: a fresh salt is a cold prompt
  std::vector<int32_t> banned;       // ids biased by -100 (end-of-generation ids: exact token counts)
  double timeout_s = 600;
};
// What the load legs add to a call (load_legs.h).
struct CompletionBody {
  nlohmann::json messages;  // non-null: POST /v1/chat/completions with these (the call's prompt unused)
  nlohmann::json extra;     // more body fields, e.g. {"ignore_eos": true}
};
// One streaming greedy completion, measured at the client. Errors: transport, HTTP status, no content.
StatusOr<CompletionTiming> StreamCompletion(int port, const CompletionCall& call, const CompletionBody& more = {});

// Folds one SSE `data:` payload of a completions stream into `t` (exposed for tests). `t_ms` is the time
// since the request was sent.
void FoldCompletionEvent(const std::string& data, double t_ms, CompletionTiming& t, std::string* error);

// The model's end-of-generation ids (eos, eot, eom) from `ember inspect MODEL --json`.
StatusOr<std::vector<int32_t>> EogTokenIds(const std::string& ember_binary, const std::string& model);

// The fixed conversation: `turns` (user, assistant) pairs after a system prompt. Assistant replies are
// scripted text (not generated), so every stack and every round sees the same prompts.
std::vector<std::pair<std::string, std::string>> ConversationScript(int turns);
// `messages` rendered by the server's own chat template (POST /apply-template, with the generation prompt)
// and tokenized by its own tokenizer (POST /tokenize, specials parsed, none added): the ids its chat
// endpoint would compute. ember and llama-server both offer the two endpoints.
StatusOr<std::vector<int32_t>> RenderChatIds(int port, const nlohmann::json& messages);
// Turn k's prompt ids (system + k user messages + the k-1 scripted replies between them, with the
// generation prompt), templated and tokenized by the server on `port`.
StatusOr<std::vector<std::vector<int32_t>>> ConversationTurnIds(int port, int turns);
// The same through a short-lived `ember serve MODEL` (h2h tokenizes once per model).
StatusOr<std::vector<std::vector<int32_t>>> BuildConversationIds(const std::string& ember_binary,
                                                                 const std::string& model, int turns);
// Replays the turns on a running server, in order, under one cache salt; TTFT per turn.
StatusOr<std::vector<TurnMeasurement>> RunConversation(int port, const std::vector<std::vector<int32_t>>& turns,
                                                       int gen_tokens, const std::string& salt,
                                                       const std::vector<int32_t>& banned, double timeout_s);

// `ember bench MODEL --served`.
struct ServedBenchConfig {
  std::string ember_binary, model;
  int threads = 0;        // 0: the engine's default; the direct runs use whatever the server reports
  int pp = 512, tg = 128; // the served request decodes tg+1 tokens: its first comes out of prefill
  int rounds = 5;
  int turns = 10, turn_gen = 16;
  std::string tokens_file;  // JSON array of prompt ids; empty: the fixed bench prompt stretched to pp
  double timeout_s = 900;
  std::function<void(const std::string&)> log;  // optional progress lines
  ProgressBar* progress = nullptr;              // optional: one unit per round (warm-up included)
};

struct ServedBenchResult {
  int threads = 0, turns = 0;
  bool same_tokens = false;   // the direct runs were fed the served prompt's ids (--tokens-file)
  std::vector<double> direct_decode, served_decode, served_ttft_ms, ready_ms, warm_last_ttft_ms,
      cold_last_ttft_ms;
  int warm_last_cached = 0, last_turn_prompt = 0;
  double direct_decode_median = 0, served_decode_median = 0, ready_ms_median = 0, served_ttft_median = 0,
         warm_ttft_median = 0, cold_ttft_median = 0;
  double server_tax = 0;      // 1 - served / direct
  int64_t server_peak_rss = 0;
  nlohmann::json ToJson() const;
  std::string ToText() const;
};

StatusOr<ServedBenchResult> RunServedBench(const ServedBenchConfig& cfg);

}  // namespace ember::bench
