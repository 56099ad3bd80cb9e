// A benchmark stack (ember, llama.cpp, ...) behind one interface, so h2h's orchestration is tested with
// fakes and a new stack or leg is one class. Each Run is one measured round; real runners start a fresh
// process per round (the peer's measurements are fresh processes, so ember's are too).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::bench {

// The arenas of docs/bench-spec.md §3; rows only ever compare within one leg.
enum class Leg {
  kDirect,        // library call in-process: prefill and decode speed
  kServed,        // through the HTTP server: TTFT, served decode, start -> ready
  kCacheWarm,     // 10-turn conversation, RAM prefix cache: TTFT per turn
  kCacheRestore,  // the same, each turn the first request after a restart: SSD restore
  kCacheCold,     // the same with the cache off
  kConcurrency,   // N concurrent streaming clients per level: aggregate tok/s, TTFT p50/p95 (load_legs.h)
  kAgents,        // K agents, shared preamble, own histories, several turns: wall time, TTFT, recompute
};

inline bool IsCacheLeg(Leg leg) { return leg == Leg::kCacheWarm || leg == Leg::kCacheRestore || leg == Leg::kCacheCold; }
inline bool IsLoadLeg(Leg leg) { return leg == Leg::kConcurrency || leg == Leg::kAgents; }

struct LegSpec {
  Leg leg;
  const char* name;
  bool implemented;  // h2h skips (and says so) legs no runner supports yet
};
const std::vector<LegSpec>& AllLegs();
const char* LegName(Leg leg);
std::optional<Leg> ParseLeg(const std::string& name);

struct BenchRequest {
  std::string model_path;
  std::vector<int32_t> tokens;  // the same ids for every stack (tokenized once per model)
  int gen_tokens = 128;
  int threads = 1;
  // Cache legs: turn k's full prompt ids (the same for every stack), and tokens generated per turn.
  std::vector<std::vector<int32_t>> turns;
  int turn_gen_tokens = 16;
  // Concurrency leg: the client counts, each client one greedy completion of `client_gen_tokens` of its
  // own `client_prompt_tokens`-id prompt (derived from `tokens`, so no two clients share a prefix).
  std::vector<int> clients = {1, 2, 4, 8};
  int client_gen_tokens = 96, client_prompt_tokens = 64;
  // Agents leg: `agents` chat histories under one shared preamble, `agent_turns` turns of
  // `agent_gen_tokens` tokens each (load_legs.h AgentScript).
  int agents = 4, agent_turns = 4, agent_gen_tokens = 32, preamble_tokens = 1400;
};

// One level of a load leg (a client count of the concurrency leg, or the whole agents workload), as the
// client saw it. Every figure a plain number so the orchestration can point at it.
struct LoadMeasurement {
  int clients = 0, requests = 0;
  double wall_ms = 0;          // first request sent -> last stream finished
  double aggregate_tok_s = 0;  // all completion tokens / wall time
  double ttft_p50_ms = 0, ttft_p95_ms = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t recomputed_tokens = -1;  // prompt tokens the server computed (not cached); -1: it did not say
  nlohmann::json raw;          // per-request figures and how they were read
};

// One turn of a cache leg's conversation.
struct TurnMeasurement {
  int turn = 0;  // 1-based
  double ttft_ms = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  std::string tier;  // "ram", "ssd", "none", or the stack's own word
};

struct RunMeasurement {
  std::optional<double> prefill_tok_s, decode_tok_s, ttft_ms, ready_ms;
  std::vector<TurnMeasurement> turns;                   // cache legs
  std::vector<LoadMeasurement> levels;                  // load legs, in the order of BenchRequest::clients
  int64_t peak_rss_bytes = 0;
  std::optional<std::string> version, variant;          // stack version, e.g. CPU variant library
  std::optional<std::string> arch, dtype;
  std::optional<int64_t> params;
  nlohmann::json raw;                                   // the stack's own output, kept in samples
};

class StackRunner {
 public:
  virtual ~StackRunner() = default;
  virtual std::string name() const = 0;  // "ember", "llama.cpp": the row's `stack`
  virtual bool Supports(Leg leg) const = 0;
  // Why a leg this stack does not support is skipped. A reason starting "n/a" is stored as an eval-DB
  // row tagged `n/a` (the report shows it); anything else is only printed.
  virtual std::string SkipReason(Leg leg) const {
    return std::string("skipped: leg ") + LegName(leg) + " not implemented yet";
  }
  // One measured round. Errors: the stack could not run or printed no usable figures.
  virtual StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) = 0;
};

// Direct: `ember bench MODEL --json --pp N --tg N --threads T --reps 1`. Served and cache legs: a fresh
// `ember serve MODEL` per round (per turn for cache-restore), measured over loopback (served_bench.h).
// Load legs: a fresh `ember serve` per level, `serve_extra` appended (and `--parallel N` when serve has it).
std::unique_ptr<StackRunner> MakeEmberRunner(const std::string& ember_binary, double timeout_s,
                                             const std::vector<std::string>& serve_extra = {});
// Direct: `node <runner.mjs> bench MODEL --tokens ... --gen N --threads T` (node-llama-cpp peer). Cache
// legs: `runner.mjs converse` (one context sequence reused across turns, or a fresh one per turn; restore
// through the sequence's state file). Served: n/a, node-llama-cpp has no HTTP server.
std::unique_ptr<StackRunner> MakeLlamaCppRunner(const std::string& node, const std::string& runner_mjs,
                                                double timeout_s);
// Load legs only: a native `llama-server` (scripts/build-peer) per level (llama_server.h).
struct LlamaServerOptions {
  std::string binary;              // empty: not built, every leg is n/a
  std::vector<std::string> extra;  // more llama-server flags (after ours, so they win)
  double timeout_s = 900;
};
std::unique_ptr<StackRunner> MakeLlamaServerRunner(const LlamaServerOptions& options);

// Parses a stack's JSON output into a measurement. Exposed for tests.
StatusOr<RunMeasurement> ParseEmberBenchJson(const std::string& text);
StatusOr<RunMeasurement> ParsePeerBenchJson(const std::string& text);
// `runner.mjs converse` output: {"turns": [{"turn", "ttft_ms", "prompt_tokens", "cached_tokens"}...]}.
StatusOr<RunMeasurement> ParsePeerConverseJson(const std::string& text);

}  // namespace ember::bench
