// Memory admission (issues #16, #30): a budget in bytes for the KV of live sequences plus what the RAM
// prompt cache holds, so concurrent generations never grow the process past it (never an OOM kill).
// The admission itself is the batch runner's (engine/batch_runner.h: one FIFO queue, the step planner's
// rule); this file holds the budget's arithmetic and the cache side of it:
//
//   ReservationBytes: a live sequence reserves (prompt - cached + max_tokens + one block) positions ×
//   the KV bytes of one position (KvConfig: every attention layer's K and V), plus a hybrid's recurrent
//   state (bytes_per_sequence; an adopted one is copied on the first write). Adopted blocks are the cache's,
//   already counted in its resident bytes; the extra block is the partial tail block a sequence
//   allocates ahead. Clamped to the budget, so a request that fits at all runs once it is alone.
//   ShrinkCacheTo: the lane's "make room" (BatchJob::make_room): the RAM cache is demoted to SSD with
//   the cold tier, else evicted LRU, down to the bytes the runner says it may keep.
//   CheckAdmissible: InvalidArgument when prompt + max_tokens positions alone exceed the budget (the
//   server's 400), naming the positions, the bytes and the budget.
//
// What it cannot see: blocks a sequence shares with a cache entry that a shrink then evicts stay alive
// (held by the sequence) until it ends, though no longer counted — at most the cached prefixes of the
// running and waiting sequences (a waiting job holds its adopted or SSD-restored prefix while it waits).
// Activation buffers and the weights are outside the budget (the default budget is computed after
// them; kv_budget.cc).
//
// Thread-safety: every method may be called from any thread. ShrinkCacheTo may block on the disk
// (demotion writes) — a lane's thread, never a step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tiered/tiered_cache.h"
#include "util/mutex.h"
#include "util/status.h"

namespace ember {

struct KvBudgetOptions {
  uint64_t budget_bytes = 0;         // > 0
  uint64_t bytes_per_position = 0;   // KvBytesPerPosition(engine KV config); > 0
  int64_t block_positions = 32;      // the KV block size: one block of slack per sequence
  uint64_t bytes_per_sequence = 0;   // what a sequence holds whatever its length: a hybrid's recurrent
                                     // state (KvConfig::recurrent_bytes; docs/hybrid.md)
};

struct KvBudgetStats {
  uint64_t budget_bytes = 0;
  uint64_t cache_bytes = 0;          // the RAM tier's resident bytes
  uint64_t shrinks = 0;              // ShrinkCacheTo calls that had to shrink the RAM cache
};

class KvBudget {
 public:
  // tiers may be null (no cache residency to count or shrink). It must outlive this.
  KvBudget(KvBudgetOptions options, TieredCache* tiers);

  uint64_t budget_bytes() const { return opts_.budget_bytes; }
  uint64_t bytes_per_position() const { return opts_.bytes_per_position; }
  // Bytes a sequence of prompt_tokens (cached_tokens of them adopted) and max_tokens reserves.
  uint64_t ReservationBytes(int64_t prompt_tokens, int64_t cached_tokens, int64_t max_tokens) const;

  Status CheckAdmissible(int64_t prompt_tokens, int64_t max_tokens) const;
  // The RAM cache's resident bytes (what the budget holds besides the reservations).
  uint64_t CacheBytes() const;
  // Shrinks the RAM cache to at most `cache_bytes` if it holds more (disk I/O: a lane, never a step).
  void ShrinkCacheTo(int64_t cache_bytes) EXCLUDES(mu_);

  KvBudgetStats stats() const EXCLUDES(mu_);

 private:
  const KvBudgetOptions opts_;
  TieredCache* const tiers_;
  mutable Mutex mu_;
  uint64_t shrinks_ GUARDED_BY(mu_) = 0;
};

// MemAvailable of /proc/meminfo text, in bytes; nullopt if absent or malformed.
std::optional<uint64_t> ParseMemAvailable(std::string_view meminfo);

// The default --kv-budget: 75 % of (available memory - resident_bytes), where available memory is
// MemAvailable (/proc/meminfo) or, where that cannot be read, physical RAM; resident_bytes is what the
// server must keep resident besides KV (the model's weights). At least 64 MiB. `how` (if not null)
// receives a one-line explanation for the start banner.
uint64_t DefaultKvBudgetBytes(uint64_t resident_bytes, std::string* how);

}  // namespace ember
