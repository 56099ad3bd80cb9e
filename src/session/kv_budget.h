// Memory admission (issue #16): a budget in bytes for the KV of live sequences plus what the RAM prompt
// cache holds, so concurrent generations never grow the process past it (never an OOM kill).
//
//   A live sequence reserves (prompt - cached + max_tokens + one block) positions × the KV bytes of one
//   position (KvConfig: every layer's K and V); before the cache lookup it reserves the whole prompt,
//   and the session shrinks the reservation once it knows what was adopted (adopted blocks are the
//   cache's, already counted in its resident bytes). The extra block is the partial tail block a
//   sequence allocates ahead. A reservation is clamped to the budget, so a request that fits at all
//   runs once it is alone.
//
//   TryReserve: reserved + need + RAM-cache bytes <= budget admits. Otherwise the RAM cache is shrunk
//   (TieredCache::ShrinkTo: demoted to SSD with the cold tier, else evicted LRU) to make room, and if
//   the live reservations alone leave no room it returns null: the request waits.
//   CheckAdmissible: InvalidArgument when prompt + max_tokens positions alone exceed the budget (the
//   server's 400), naming the positions, the bytes and the budget.
//
// What it cannot see: blocks a running sequence shares with a cache entry that the shrink then evicts
// stay alive (held by the sequence) until it ends, though no longer counted — at most the cached
// prefixes of the running sequences. Activation buffers and the weights are outside the budget (the
// default budget is computed after them; kv_budget.cc).
//
// Thread-safety: every method may be called from any thread; a Reservation may be released (destroyed)
// on any thread. TryReserve may block on the disk (demotion writes) — the scheduler's thread, never a
// step.
#pragma once

#include <atomic>
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
};

struct KvBudgetStats {
  uint64_t budget_bytes = 0;
  uint64_t reserved_bytes = 0;       // live reservations
  uint64_t cache_bytes = 0;          // the RAM tier's resident bytes
  uint64_t live = 0;                 // reservations held
  uint64_t admitted = 0;             // TryReserve successes
  uint64_t deferred = 0;             // TryReserve returned null (the request waited)
  uint64_t shrinks = 0;              // TryReserve shrank the RAM cache to make room
};

class KvBudget {
 public:
  // A live sequence's share; released on destruction.
  class Reservation {
   public:
    ~Reservation();
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    uint64_t bytes() const;
    // After the lookup: cached_tokens of the prompt came from the cache (never grows the reservation).
    void NoteCached(int64_t cached_tokens);

   private:
    friend class KvBudget;
    Reservation(KvBudget* budget, int64_t prompt_tokens, int64_t max_tokens, uint64_t bytes)
        : budget_(budget), prompt_tokens_(prompt_tokens), max_tokens_(max_tokens), bytes_(bytes) {}
    KvBudget* const budget_;
    const int64_t prompt_tokens_, max_tokens_;
    std::atomic<uint64_t> bytes_;  // changed only under budget_->mu_ (with its reserved_); read freely
  };

  // tiers may be null (no cache residency to count or shrink). It must outlive this.
  KvBudget(KvBudgetOptions options, TieredCache* tiers);

  uint64_t budget_bytes() const { return opts_.budget_bytes; }
  uint64_t bytes_per_position() const { return opts_.bytes_per_position; }
  // Bytes a sequence of prompt_tokens (cached_tokens of them adopted) and max_tokens reserves.
  uint64_t ReservationBytes(int64_t prompt_tokens, int64_t cached_tokens, int64_t max_tokens) const;

  Status CheckAdmissible(int64_t prompt_tokens, int64_t max_tokens) const;
  // Null: it does not fit now even with the RAM cache emptied (wait for a live sequence to end).
  std::unique_ptr<Reservation> TryReserve(int64_t prompt_tokens, int64_t max_tokens) EXCLUDES(mu_);

  KvBudgetStats stats() const EXCLUDES(mu_);

 private:
  void Release(Reservation* r) EXCLUDES(mu_);
  void Resize(Reservation* r, uint64_t bytes) EXCLUDES(mu_);
  uint64_t CacheBytes() const;

  const KvBudgetOptions opts_;
  TieredCache* const tiers_;
  mutable Mutex mu_;
  uint64_t reserved_ GUARDED_BY(mu_) = 0;
  KvBudgetStats st_ GUARDED_BY(mu_);
};

// MemAvailable of /proc/meminfo text, in bytes; nullopt if absent or malformed.
std::optional<uint64_t> ParseMemAvailable(std::string_view meminfo);

// The default --kv-budget: 75 % of (available memory - resident_bytes), where available memory is
// MemAvailable (/proc/meminfo) or, where that cannot be read, physical RAM; resident_bytes is what the
// server must keep resident besides KV (the model's weights). At least 64 MiB. `how` (if not null)
// receives a one-line explanation for the start banner.
uint64_t DefaultKvBudgetBytes(uint64_t resident_bytes, std::string* how);

}  // namespace ember
