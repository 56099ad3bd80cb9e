// `ember bench --vs-llamacpp`'s comparison: ember's and the llama.cpp peer's per-round speeds (rounds
// interleaved, after a warm-up round), the ratios ember ÷ peer as the ratio of medians plus the range of
// the per-round ratios, and how they are printed — text lines, the JSON blocks, a Markdown section for
// bench/RESULTS.md (scripts/bench-results).
//
// The peer is native llama.cpp's llama-bench when the peer build exists, otherwise the node-llama-cpp
// binding, and every line and JSON field that carries a number says which: the binding's decode has no
// persistent thread pool, so ember ÷ binding overstates ember ÷ llama.cpp (docs/bench.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::bench {

enum class PeerKind { kLlamaBench, kBinding };

// "llama-bench" | "node-llama-cpp" (JSON `peer.kind`, and the column name in every line).
const char* PeerKindName(PeerKind kind);
// One sentence: what the peer is, and for the binding why its ratios overstate ember.
std::string PeerDescription(PeerKind kind);

// One stack's speeds in one round (tokens/s; long_pp 0 when not measured).
struct RoundSpeeds {
  double pp = 0, tg = 0, long_pp = 0;
};

struct PeerComparison {
  PeerKind kind = PeerKind::kBinding;
  std::string fallback_reason;  // the binding: why not llama-bench ("" when it was asked for)
  std::string binary;           // llama-bench's path, or the binding's runner.mjs
  std::string build_commit, cpu_info;  // llama-bench's own report ("" for the binding)
  int threads = 0;
  std::string kv = "f16";
  int64_t ubatch = 512, pp = 512, tg = 128, long_pp = 0;
  int peer_reps = 1;  // llama-bench -r per round
  std::vector<RoundSpeeds> ember, peer;  // one entry per measured round, same length
};

// ember ÷ peer for one metric: ratio of the medians, and min / max of the per-round ratios.
struct RatioSummary {
  double ember = 0, peer = 0, ratio = 0, round_min = 0, round_max = 0;
  std::vector<double> rounds;
};
RatioSummary Summarize(const std::vector<double>& ember, const std::vector<double>& peer);

// JSON `peer` block: kind, native, description, fallback_reason, binary, build_commit, cpu_info, threads,
// kv, flash_attn ("off"), ubatch, reps_per_round, tg_depth, rounds [{prefill_tok_s, decode_tok_s,
// long_prefill_tok_s}], prefill_tok_s / decode_tok_s / long_prefill_tok_s (medians).
nlohmann::json PeerJson(const PeerComparison& c);
// JSON `ratios` block: vs (the peer kind), and prefill / decode / long_prefill, each {ratio, round_min,
// round_max, rounds, ember_tok_s, peer_tok_s, vs}.
nlohmann::json RatiosJson(const PeerComparison& c);

// The text lines `ember bench --vs-llamacpp` prints: the peer and its settings, each round, then one
// line per metric "pp512: ember X vs llama-bench Y tok/s -> ember ÷ llama-bench R (rounds a-b)".
std::vector<std::string> ComparisonLines(const PeerComparison& c);

// A Markdown section (### heading `title`, the settings, a table of the metrics) for bench/RESULTS.md.
std::string ComparisonMarkdown(const PeerComparison& c, const std::string& title);

}  // namespace ember::bench
