// `ember bench-cache`: a scripted multi-turn conversation (a long system prompt, then turns that each
// add a user message and a generated reply) timed with the prompt cache on and off, side by side.
// Token ids are synthetic (deterministic, in the ordinary-token range): TTFT depends on counts and
// positions, not on the text.
//
// Per turn it measures: TTFT with the cache (lookup + adopt + prefill of the new tokens + first
// sample), TTFT without it (prefill of the whole prompt), and the prefill of that turn's new tokens
// alone on an already-prepared sequence — the floor the cached TTFT is compared against (goal: <= 1.05x).
//
// Thread-safety: runs on the calling thread; the engine must not be busy with other sequences if the
// timings are to mean anything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <ostream>
#include <vector>

#include "session/cached_session.h"
#include "engine/engine.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember {

struct CacheBenchOptions {
  int turns = 10;
  int64_t system_tokens = 2000;
  int64_t user_tokens = 200;
  int64_t reply_tokens = 32;   // generated (greedy) per turn, all but the last forwarded
  size_t cache_bytes = size_t{8} << 30;
  uint32_t seed = 1;
  ProgressBar* progress = nullptr;  // optional: one unit per turn
};

struct CacheBenchTurn {
  int turn = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, prefilled_tokens = 0;
  double ttft_on_s = 0, ttft_off_s = 0;
  double prefill_new_s = 0;    // prefill of the new tokens alone (no lookup, no sampling)
  double decode_tok_s = 0;     // decode rate of the cache-on run
  uint64_t cow_bytes_copied = 0;
};

// Deterministic pseudo-random ids in [100, 100 + min(n_vocab - 200, 20000)): content-free prompts for
// cache benchmarks that need no tokenizer.
std::vector<int32_t> SyntheticIds(int64_t n, uint32_t seed, int32_t n_vocab);
// A greedy request generating exactly max_tokens (no end-of-generation stop), cache on or off alike.
SessionRequest BenchRequest(std::vector<int32_t> prompt, int64_t max_tokens);

StatusOr<std::vector<CacheBenchTurn>> RunCacheBench(Engine& engine, const CacheBenchOptions& options);

// Loads `model` (ids only, a context sized for the script) for the cache benchmark.
StatusOr<std::unique_ptr<Engine>> LoadCacheBenchEngine(const std::string& model, int threads,
                                                        const CacheBenchOptions& options);

// A fixed-width table, one row per turn, plus the totals.
void PrintCacheBench(const std::vector<CacheBenchTurn>& turns, std::ostream& out);

}  // namespace ember
