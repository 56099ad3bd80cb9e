// h2h's load legs, client side (docs/bench.md, "Load legs"): the one HTTP client every stack is driven
// with, so ember and llama-server differ only in the server started for the level.
//
//   concurrency: N clients at once, each one streaming greedy completion of the same number of tokens
//                (end-of-generation ids biased away and `ignore_eos`, so every request decodes exactly
//                that many; the count is read back from `usage` either way) of its own token-id prompt;
//   agents:      K agents at once under one shared preamble (a long policy text as the system message),
//                each with its own role and its own history: every turn appends the reply and the next
//                user message, T turns each.
// Figures: aggregate tok/s = all completion tokens / wall time of the level; TTFT p50 / p95 over every
// request; the prompt tokens each server computed (not served from its cache).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/served_bench.h"
#include "bench/stack_runner.h"
#include "util/status.h"

namespace ember::bench {

// Where and how to send: identical for every stack.
struct LoadTarget {
  int port = 0;
  std::vector<int32_t> banned;  // end-of-generation ids, biased by -100
  double timeout_s = 600;       // per request
};

// The body fields every load request carries beside the prompt: greedy, exact length.
nlohmann::json LoadRequestExtra();

// Client `client`'s prompt: `base`'s first id (BOS) then `n - 1` ids read cyclically from a different
// offset per client, so no two clients share more than that first id. Empty when base is.
std::vector<int32_t> ClientPrompt(const std::vector<int32_t>& base, int client, int n);

// The discarded warm-up request's prompt: the first id, then `n - 1` ids of `base` read backwards, so it
// is no client's prefix (a server that keeps its last prompt, as llama-server's slots do, gains nothing).
std::vector<int32_t> WarmupPrompt(const std::vector<int32_t>& base, int n);

// The figures of one level from its requests (pure: tested on synthetic timings). A request reports
// its computed prompt tokens through `timings.prompt_n` (llama-server) or prompt - cached tokens from
// `usage` (ember); when any request said neither, recomputed_tokens is -1 (unknown).
LoadMeasurement SummarizeLoad(int clients, const std::vector<CompletionTiming>& requests, double wall_ms);

// `prompts.size()` concurrent clients, one completion of `gen_tokens` each.
StatusOr<LoadMeasurement> RunClientLevel(const LoadTarget& target, const std::vector<std::vector<int32_t>>& prompts,
                                         int gen_tokens);

// The agents workload's text: one shared preamble, a role per agent, a user message per agent and turn.
struct AgentScript {
  std::string preamble;
  std::vector<std::string> roles;                // one per agent
  std::vector<std::vector<std::string>> asks;    // [agent][turn]
};
// Deterministic; the preamble is about `preamble_tokens` tokens of English (sized by characters: 4.6 a
// token, as the llama 3 vocabulary splits it).
AgentScript MakeAgentScript(int agents, int turns, int preamble_tokens);

// Every agent in its own thread, its turns in order; `gen_tokens` per reply.
StatusOr<LoadMeasurement> RunAgents(const LoadTarget& target, const AgentScript& script, int gen_tokens);

// The leg procedure every stack shares: per level (each client count; the agents workload is one level
// of `agents` lanes) a fresh server started with that many lanes, one short discarded warm-up request
// (first touch of the weights), the level, then `stop`. `target.port` is filled in per server.
struct LoadLegHooks {
  std::function<StatusOr<std::unique_ptr<ServerProcess>>(int lanes)> start;
  std::function<Status(ServerProcess&)> stop;
};
StatusOr<RunMeasurement> RunLoadLeg(Leg leg, const BenchRequest& req, LoadTarget target, const LoadLegHooks& hooks);

}  // namespace ember::bench
