// `ember bench MODEL` (the direct leg): prefill (pp) and decode (tg) throughput of the engine in this
// process, median of reps after a warm-up; peak RSS; the weight-read bandwidth decode achieves against
// this machine's measured read bandwidth; a per-op time breakdown. With vs_llamacpp, runs of the
// llama.cpp peer (1 and 2 threads) are interleaved with ember's reps on the same file and token ids, and
// ember / peer-best ratios are reported. The CLI (cli/cmd_bench.cc) parses flags and prints the result.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/llamacpp_peer.h"
#include "util/status.h"

namespace ember::bench {

struct DirectBenchConfig {
  std::string model, kv = "f16";  // kv: f16 | f32
  int64_t pp = 512, tg = 128, ubatch = 512;
  int reps = 5, threads = 0;      // threads 0: the engine's default (physical cores)
  std::string tokens_file;        // JSON array of prompt ids (overrides pp); the peer gets the same ids
  bool vs_llamacpp = false;
  PeerCommand peer;
  // Batched decode (engine/batch_runner.h): for each N, N sequences each holding its own pp-token
  // prompt decode tg tokens together; aggregate tok/s = N * tg / wall time (median of reps).
  std::vector<int> parallel;
};

// The measurement as the one JSON object `ember bench --json` prints: model, threads, pp_tokens,
// tg_tokens, kv, reps, prefill_tok_s / decode_tok_s (medians) and their runs, peak_rss_bytes,
// weight_bytes, bandwidth_gbs, machine_read_gbs, bandwidth_fraction, ops.{prefill,decode}; with
// vs_llamacpp also peer.{runs,best_prefill_tok_s,best_decode_tok_s} and ratios.{prefill,decode}; with
// parallel, batch_decode: [{sequences, tok_s, runs, ratio_to_one}].
StatusOr<nlohmann::json> RunDirectBench(const DirectBenchConfig& config);

// The prompt ids of --tokens-file: a JSON array of integers in [0, n_vocab).
StatusOr<std::vector<int32_t>> ReadTokensFile(const std::string& path, int64_t n_vocab);

// Read bandwidth (GB/s) of `threads` threads summing disjoint parts of a 512 MiB buffer (best of 3).
double MeasureReadBandwidth(int threads);

}  // namespace ember::bench
