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

// The arenas of spec/bench.md §3; rows only ever compare within one leg.
enum class Leg {
  kDirect,        // library call in-process: prefill and decode speed
  kServed,        // through the HTTP server: TTFT and served decode (later)
  kCacheWarm,     // 10-turn conversation, RAM prefix cache (later)
  kCacheRestore,  // the same after a restart: SSD restore (later)
  kCacheCold,     // the same with the cache off (later)
};

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
};

struct RunMeasurement {
  std::optional<double> prefill_tok_s, decode_tok_s, ttft_ms;
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
  // One measured round. Errors: the stack could not run or printed no usable figures.
  virtual StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) = 0;
};

// Runs `ember bench MODEL --json --pp N --tg N --threads T --reps 1` with the given ember binary.
std::unique_ptr<StackRunner> MakeEmberRunner(const std::string& ember_binary, double timeout_s);
// Runs `node <runner.mjs> bench MODEL --tokens ... --gen N --threads T` (node-llama-cpp peer).
std::unique_ptr<StackRunner> MakeLlamaCppRunner(const std::string& node, const std::string& runner_mjs,
                                                double timeout_s);

// Parses a stack's JSON output into a measurement. Exposed for tests.
StatusOr<RunMeasurement> ParseEmberBenchJson(const std::string& text);
StatusOr<RunMeasurement> ParsePeerBenchJson(const std::string& text);

}  // namespace ember::bench
