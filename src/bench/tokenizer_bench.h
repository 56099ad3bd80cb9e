// `ember bench-tokenizer MODEL`: tokenizer throughput (MB/s) of ember and of llama.cpp side by side on the
// same generated mixed text (>= 10 MB by default). ember's time is Encode alone (best of runs); the
// peer's is taken inside node around model.tokenize only (runner.mjs tokenize-bench), so process start
// and model loading are excluded on both sides. Token counts are compared as a parity check. The CLI
// (cli/cmd_bench_tokenizer.cc) parses flags and prints the result.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "bench/llamacpp_peer.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember::bench {

struct TokenizerBenchConfig {
  std::string model;      // GGUF (vocab-only is enough)
  double mb = 10.0;       // size of the generated text in MiB
  int runs = 3;           // timed runs per side; the best is reported
  uint64_t seed = 42;     // text generator seed
  bool special = false;   // parse special tokens
  bool no_peer = false;   // measure ember only
  PeerCommand peer;
  ProgressBar* progress = nullptr;  // optional: one unit per timed run, one for the peer
};

// {"model", "bytes", "runs", "ember": {"best_ms", "mb_per_s", "n_tokens"}} and, with the peer,
// "llama_cpp" (the runner's JSON), "ratio" (ember / peer MB/s) and "same_token_count".
StatusOr<nlohmann::json> RunTokenizerBench(const TokenizerBenchConfig& config);

}  // namespace ember::bench
