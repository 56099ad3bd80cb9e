// The llama.cpp peer as the one-shot CLI benchmarks run it (`ember bench --vs-llamacpp`,
// `ember bench-tokenizer`): `node peers/llamacpp/runner.mjs <command> MODEL ...`, one fresh process per
// measurement, its result the last JSON object it prints. Every argument is passed as one argv entry
// (util/subprocess.h), so a model path with spaces, quotes or shell syntax reaches the runner intact.
// h2h's peer runner (stack_runners.cc) is the same program behind the StackRunner interface.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::bench {

struct PeerCommand {
  std::string node = "node";  // the interpreter (looked up in PATH)
  std::string runner_mjs;     // peers/llamacpp/runner.mjs
  double timeout_s = 3600;    // per run; past it the peer's process group is killed
};

// The last line of `text` that parses as a JSON object (the runners may log before it).
StatusOr<nlohmann::json> LastJsonObject(const std::string& text);

// `runner.mjs bench MODEL --tokens a,b,... --gen N --threads T --kv KV`: prefill the ids, greedy-decode
// N tokens. The runner's JSON: {"prefill_tok_s", "decode_tok_s", ...}.
StatusOr<nlohmann::json> RunPeerDecodeBench(const PeerCommand& peer, const std::string& model,
                                            const std::vector<int32_t>& prompt, int64_t gen, int threads,
                                            const std::string& kv);

// `runner.mjs tokenize-bench MODEL --text-file F --runs N [--special]`: model.tokenize alone timed inside
// node (best of N). The runner's JSON: {"bytes", "n_tokens", "best_ms", "mb_per_s", "peer"}.
StatusOr<nlohmann::json> RunPeerTokenizeBench(const PeerCommand& peer, const std::string& model,
                                              const std::string& text_path, int runs, bool special);

}  // namespace ember::bench
