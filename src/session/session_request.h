// What a session request asks for and what it reports: shared by CachedSession (one request forwarded
// alone) and BatchedSession (through the batch runner), which keep the same contract.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "util/env.h"

namespace ember {

struct SessionRequest {
  std::vector<int32_t> prompt;    // templated and tokenized; not empty
  std::string ns;                 // CacheNamespace::Key()
  bool bypass_cache = false;      // tokens do not identify the content (image placeholders): no lookup, no insert
  // Forwarded to the engine as is, `constraint` (a grammar, docs/grammar.md) included: neither session
  // looks at it, and a cached prefix never depends on it (it only masks the generated tokens).
  GenerateOptions generate;
};

struct SessionResult {
  GenerateResult gen;             // the engine's result (generated tokens, stop reason, its own timings)
  int64_t prompt_tokens = 0;
  // Prompt positions this request did not compute: adopted from the cache, plus (batched) positions
  // shared from another running sequence's in-flight prefill (shared_tokens).
  int64_t cached_tokens = 0;
  int64_t shared_tokens = 0;      // of cached_tokens: from an in-flight sequence (BatchedSession only)
  int64_t prefilled_tokens = 0;   // prompt positions this request forwarded
  bool snapshot_stored = false;   // a prompt-boundary entry at L - 1 was inserted
  int64_t checkpoints_stored = 0; // hybrid models: recurrent-state checkpoints inserted (docs/hybrid.md)
  double ttft_s = 0;              // request start (before the lookup) -> first token sampled
  uint64_t cow_bytes_copied = 0;  // bytes of adopted blocks that extending the view copied
  int64_t entry_tokens = 0;       // length of the entry put back (0: none)
  std::string tier = "none";      // where cached_tokens came from: "ram", "ssd" or "none"
  std::string cold_decision;      // the cold tier's choice (ColdLookup::decision); "" without a cold tier
  double restore_ms = 0;          // time to restore from SSD (0: no restore)
  double queued_s = 0;            // BatchedSession: waiting for a step slot
};

class KvBudget;

struct CachedSessionOptions {
  int64_t snapshot_min_tokens = 256;
  // Hybrid models (a recurrent state, reusable only at the exact position it was kept): besides the
  // checkpoint before each turn start and at L - 1, one every this many prompt tokens (0: none).
  int64_t checkpoint_every = 2048;
  // Memory admission (session/kv_budget.h): each job reserves ReservationBytes(prompt, adopted,
  // max_tokens) of it in the runner's queue, and its caller's thread shrinks the RAM cache to make room.
  // Null: no budget. Must outlive the session.
  KvBudget* budget = nullptr;
  Env* env = nullptr;             // clock for ttft and the prefill rate; null: Env::Default()
};

}  // namespace ember
