// The native peer for the load legs: llama.cpp's own `llama-server`, built from the source node-llama-cpp
// pins by scripts/build-peer (node-llama-cpp itself has no HTTP server). One fresh server per level:
// the same model file and thread count as ember, `-np N` slots with one unified KV pool sized for N
// sequences, F16 K/V cache and flash attention off (as ember), `--jinja` (the GGUF chat template);
// ready at the first 200 from GET /health; its process group killed after the level.
#pragma once

#include <string>
#include <vector>

#include "bench/stack_runner.h"
#include "util/status.h"

namespace ember::bench {

// The llama-server binary: `explicit_path` when given (it must be executable), else the bin directory
// `<source_dir>/scripts/build-peer --print` names. Empty when neither: the legs are then n/a.
std::string FindLlamaServer(const std::string& explicit_path, const std::string& source_dir);

// A loopback TCP port free right now (bound and released: the server binds it a moment later).
StatusOr<int> FreeLoopbackPort();

// The context (KV tokens) one lane of a load leg needs: its prompt, its replies and some slack.
int LaneContextTokens(Leg leg, const BenchRequest& req);

// llama-server's argv for one level: `lanes` slots of `ctx_per_lane` tokens each, `extra` appended.
std::vector<std::string> LlamaServerArgv(const std::string& binary, const std::string& model, int port, int threads,
                                         int lanes, int ctx_per_lane, const std::vector<std::string>& extra);

}  // namespace ember::bench
