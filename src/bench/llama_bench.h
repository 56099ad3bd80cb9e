// Native llama.cpp's own benchmark, `llama-bench` (built by scripts/build-peer), as the speed peer of
// `ember bench --vs-llamacpp`: where it is, the argv of one run with ember's settings, and its `-o json`
// output read back. One fresh process per call, started through util/subprocess.h (argv, no shell).
//
// llama-bench times prefill (pp) and decode (tg) as separate tests. `-p N -n 0` is prefill of N ids from
// an empty context; `-p 0 -n M -d N` first fills N positions (untimed), then times M decode steps, which
// is where ember's decode runs too (after its N-id prompt). Its ids are its own random ones; the cost of
// a forward pass does not depend on which ids they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/peer_compare.h"
#include "util/status.h"

namespace ember::bench {

// The settings both stacks run with. llama-bench's flash attention is off: ember computes attention as
// ggml's non-flash path does (src/model/attention.cc).
struct LlamaBenchSettings {
  int threads = 1;
  std::string kv = "f16";  // -ctk / -ctv
  int64_t ubatch = 512;    // -ub (ember's prefill chunk); -b is at least the longest prompt
  int reps = 1;            // -r: repetitions inside one llama-bench process (its median is taken)
  double timeout_s = 3600;
};

// One test of llama-bench's JSON output (the fields ember reads).
struct LlamaBenchTest {
  int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
  int threads = 0;
  std::string type_k, type_v;
  bool flash_attn = false;
  double avg_ts = 0;               // tokens/s, llama-bench's mean
  std::vector<double> samples_ts;  // tokens/s of each repetition
  std::string build_commit, cpu_info, model_type;
  double median_ts() const;        // of samples_ts (avg_ts when there are none)
};

// argv of `llama-bench -m MODEL -p n_prompt -n n_gen -d depth ...` with `settings`, `-o json`.
std::vector<std::string> LlamaBenchArgv(const std::string& binary, const std::string& model, int64_t n_prompt,
                                        int64_t n_gen, int64_t depth, const LlamaBenchSettings& settings);

// llama-bench `-o json` stdout: a JSON array of tests. InvalidArgument (quoting the start of the text)
// when it is not one, or a test lacks the fields above.
StatusOr<std::vector<LlamaBenchTest>> ParseLlamaBenchJson(const std::string& text);

// Runs one llama-bench process and returns its single test. FailedPrecondition when it cannot be started;
// Internal with its exit and stderr tail when it fails; InvalidArgument when its output is not one test
// of the requested shape.
StatusOr<LlamaBenchTest> RunLlamaBench(const std::string& binary, const std::string& model, int64_t n_prompt,
                                       int64_t n_gen, int64_t depth, const LlamaBenchSettings& settings);

// Where native llama-bench is: `explicit_path` when given (it must be an executable file), otherwise
// `<bin>/llama-bench` for the bin folder `build_peer_script --print` prints (scripts/build-peer; it
// honours EMBER_PEER_DIR). NotFound, saying what was looked for and how to build it, when there is none.
StatusOr<std::string> FindLlamaBench(const std::string& explicit_path, const std::string& build_peer_script);

// `--peer`: auto (llama-bench if found, else the binding), native (llama-bench or an error), binding.
enum class PeerMode { kAuto, kNative, kBinding };
StatusOr<PeerMode> ParsePeerMode(const std::string& text);

struct PeerChoice {
  PeerKind kind = PeerKind::kBinding;
  std::string llama_bench;      // kLlamaBench: the binary
  std::string fallback_reason;  // kBinding: why (FindLlamaBench's message, or that it was asked for)
};
// kNative without a llama-bench is FindLlamaBench's NotFound, saying --peer native asked for it.
StatusOr<PeerChoice> ChoosePeer(PeerMode mode, const std::string& explicit_path, const std::string& build_peer_script);

}  // namespace ember::bench
