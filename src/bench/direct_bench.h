// `ember bench MODEL` (the direct leg): prefill (pp) and decode (tg) throughput of the engine in this
// process, median of reps after a warm-up; peak RSS; the weight-read bandwidth decode achieves against
// this machine's measured read bandwidth; a per-op time breakdown. With vs_llamacpp, a round of the
// llama.cpp peer on the same file, thread count and KV type follows each of ember's reps (after a
// warm-up round of both): native llama-bench when scripts/build-peer's build exists, otherwise the
// node-llama-cpp binding, labelled as such (peer_compare.h). The CLI (cli/cmd_bench.cc) parses flags
// and prints the result.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/llama_bench.h"
#include "bench/llamacpp_peer.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember::bench {

struct DirectBenchConfig {
  std::string model, kv = "f16";  // kv: f16 | f32
  int64_t pp = 512, tg = 128, ubatch = 512;
  int reps = 5, threads = 0;      // threads 0: the engine's default (physical cores)
  bool huge_pages = true;         // EngineOptions::huge_pages (off: weights on 4 KiB pages, for A/B)
  std::string tokens_file;        // JSON array of prompt ids (overrides pp); the peer gets the same ids
  bool vs_llamacpp = false;
  PeerMode peer_mode = PeerMode::kAuto;
  std::string llama_bench;        // "": found through build_peer_script --print
  std::string build_peer_script;  // scripts/build-peer
  int peer_reps = 1;              // llama-bench -r per round
  int64_t long_pp = 0;            // > 0: also prefill this many ids per round (e.g. 2048), both stacks
  PeerCommand peer;               // the binding's runner
  // Batched decode (engine/batch_runner.h): for each N, N sequences each holding its own pp-token
  // prompt decode tg tokens together; aggregate tok/s = N * tg / wall time (median of reps).
  std::vector<int> parallel;
  // Optional: one unit per round (RoundsOf: the warm-up, each rep, each batched level's warm-up and reps);
  // its total is set here.
  ProgressBar* progress = nullptr;
  bool repack = true;             // false: load without packed weights (EngineOptions::repack_weights)
};

// The measurement as the one JSON object `ember bench --json` prints: model, threads, pp_tokens,
// tg_tokens, kv, reps, prefill_tok_s / decode_tok_s (medians) and their runs, peak_rss_bytes,
// weight_bytes, active_weight_bytes (a MoE's per-token share), decode_read_bytes_per_token (dense
// weights plus the expert bytes the decode steps read, counted), n_params / active_params,
// packed_bytes / packed_tensors (the repacked copies, Model::PackWeights), bandwidth_gbs (decode's weight
// reads: decode_read_bytes_per_token x decode tok/s), machine_read_gbs (the better of
// machine_read_4k_gbs and machine_read_2m_gbs, bench/read_bandwidth.h: best of 3 after the reps),
// bandwidth_fraction, weights_huge_fraction and weights_reread (engine/weight_pages.h),
// ops.{prefill,decode}; with long_pp
// long_pp_tokens, long_prefill_tok_s, long_prefill_runs; with vs_llamacpp also `peer` and `ratios`
// (peer_compare.h: PeerJson, RatiosJson — each names the peer kind); with parallel, batch_decode:
// [{sequences, tok_s, runs, ratio_to_one (null without a level of 1)}].
// With vs_llamacpp and `comparison`, the rounds are also handed back for printing (ComparisonLines).
StatusOr<nlohmann::json> RunDirectBench(const DirectBenchConfig& config, PeerComparison* comparison = nullptr);

// The prompt ids of --tokens-file: a JSON array of integers in [0, n_vocab).
StatusOr<std::vector<int32_t>> ReadTokensFile(const std::string& path, int64_t n_vocab);

}  // namespace ember::bench
