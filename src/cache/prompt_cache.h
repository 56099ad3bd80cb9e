// The prompt cache's RAM tier (docs/cache-spec.md §2): token sequences -> model state, byte-capped LRU.
//
// INVARIANT: every stored entry is immutable, belongs to exactly one namespace, holds exactly
// len(tokens) positions, and the distinct bytes of all entries' buffers stay <= capacity() after every
// Insert — except that the entry just inserted is never evicted to get there.
//
//   Lookup(prompt, ns)   usable prefix p = min(LCP, len(prompt) - 1) over same-ns entries the trim rules
//                        allow at p; the longest wins, ties keep the earlier-inserted; p == 0 is a miss.
//                        Returns a *view* (shared buffers, copy-on-write) at p; the donor stays, its
//                        recency refreshed. Never consumes.
//   Insert(tokens, s, ns) replaces an identical same-ns entry; if s is fully trimmable drops (no spill)
//                        same-ns strict prefixes of tokens not shorter than s's min_reusable_offset;
//                        then evicts least-recently-used entries, spilling each, until under the cap.
//                        An entry larger than the cap is spilled (if a cold tier exists), never kept.
//   Clear()              drops everything, never spills.
//
// Byte accounting: the cache is charged the distinct buffers its entries reference. A KV block shared
// by several entries (a system prompt under many conversations) is charged once; a view handed to a
// request is the request's memory, not the cache's, even while it shares the donor's blocks. Evicting an
// entry frees (and uncharges) only the buffers no other entry references.
//
// Capacity 0 turns the cache off: Lookup misses without counting, Insert drops the state.
//
// Thread-safety: all methods may be called concurrently (one mutex guards the index and counters;
// Lookup's view shares buffers under it, which is pointer copies only). The spill hook runs on the
// inserting thread after the mutex is released, so it may call back into the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/entry_state.h"
#include "util/env.h"
#include "util/mutex.h"
#include "util/status.h"

namespace ember {

struct CacheEntry {
  std::vector<int32_t> tokens;
  std::string ns;                      // CacheNamespace::Key()
  std::unique_ptr<EntryState> state;   // state after forwarding all of tokens
  size_t bytes = 0;                    // every buffer the state references (shared ones included)
  bool trimmable = false;              // FullyTrimmable(*state)
};

struct CacheHit {
  int64_t p = 0;                       // usable prefix; 0 = miss
  std::unique_ptr<EntryState> view;    // the donor's state at p (null on a miss); the caller owns it
  int64_t donor_tokens = 0;
};

struct PromptCacheStats {
  size_t entries = 0, bytes = 0, capacity = 0;
  uint64_t lookups = 0, hits = 0, misses = 0, bypassed = 0;
  uint64_t tokens_served = 0;          // prompt tokens whose state came from a hit
  uint64_t tokens_recomputed = 0;      // prompt tokens the caller had to prefill
  uint64_t skipped_untrimmable = 0;    // candidates a trim rule refused during lookup
  uint64_t inserts = 0, replaced = 0, superseded = 0, evictions = 0, oversize = 0, spills = 0;
  uint64_t cow_bytes_copied = 0;       // reported by callers (CachedSession): bytes a hit's extension copied
};

// Receives an entry leaving RAM for the cold tier. It may keep the pointer (the entry is immutable).
using SpillFn = std::function<void(std::shared_ptr<const CacheEntry>)>;

struct PromptCacheOptions {
  size_t capacity_bytes = 0;  // 0: off
  SpillFn spill;              // null: no cold tier (eviction just frees)
  Env* env = nullptr;         // clock for last-use times (idle demotion); null: Env::Default()
};

class PromptCache {
 public:
  explicit PromptCache(PromptCacheOptions options);

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }

  // Error only if the donor's View fails (a state disagreeing with the trim rules); nothing changes then.
  StatusOr<CacheHit> Lookup(std::span<const int32_t> prompt, const std::string& ns) EXCLUDES(mu_);
  // InvalidArgument (nothing stored) if tokens.size() != state->n_pos() or a layer kind is unknown.
  Status Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state, const std::string& ns)
      EXCLUDES(mu_);
  void Clear() EXCLUDES(mu_);

  // A request that bypassed the cache (tokens that do not identify content, e.g. image placeholders).
  void NoteBypass(int64_t prompt_tokens) EXCLUDES(mu_);
  void NoteCopiedBytes(uint64_t bytes) EXCLUDES(mu_);

  PromptCacheStats stats() const EXCLUDES(mu_);
  // Entries oldest-used first (tests, /stats detail, pressure relief).
  std::vector<std::shared_ptr<const CacheEntry>> EntriesByRecency() const EXCLUDES(mu_);

  // ---- For the cold tier (tiered/tiered_cache.h); none of these spills ----
  // The entry with exactly these tokens in ns, if stored (write-behind persists it only if it still is).
  std::shared_ptr<const CacheEntry> FindExact(std::span<const int32_t> tokens, const std::string& ns) const
      EXCLUDES(mu_);
  // Entries whose last use (insert or lookup hit) is at or before cutoff_us, oldest first.
  std::vector<std::shared_ptr<const CacheEntry>> IdleSince(int64_t cutoff_us) const EXCLUDES(mu_);
  // Removes e if it is still stored and (cutoff_us >= 0) still unused since cutoff_us: an idle entry
  // leaves RAM only once its file is durable, and one used meanwhile stays. True if removed.
  bool Remove(const CacheEntry* e, int64_t cutoff_us = -1) EXCLUDES(mu_);
  // The Env's monotonic clock, in which last-use times are kept.
  int64_t NowMicros() const;

 private:
  struct Slot {
    std::shared_ptr<const CacheEntry> entry;
    uint64_t last_used = 0;
    int64_t last_used_us = 0;
  };
  struct Charge {
    size_t bytes = 0;
    int64_t refs = 0;
  };

  void ChargeLocked(const EntryState& s) REQUIRES(mu_);
  void UnchargeLocked(const EntryState& s) REQUIRES(mu_);
  // Removes slots_[i] (uncharging it); returns the entry.
  std::shared_ptr<const CacheEntry> RemoveLocked(size_t i) REQUIRES(mu_);
  void DropRedundantLocked(const CacheEntry& fresh, size_t fresh_index) REQUIRES(mu_);
  std::vector<std::shared_ptr<const CacheEntry>> EvictLocked(const CacheEntry* fresh) REQUIRES(mu_);
  // Calls the spill hook, unlocked: it may call back into the cache.
  void Spill(const std::vector<std::shared_ptr<const CacheEntry>>& victims) EXCLUDES(mu_);

  const size_t capacity_;
  const SpillFn spill_;
  Env* const env_;
  mutable Mutex mu_;
  std::vector<Slot> slots_ GUARDED_BY(mu_);  // insertion order (lookup ties keep the earlier one)
  std::unordered_map<const void*, Charge> charges_ GUARDED_BY(mu_);
  size_t charged_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t tick_ GUARDED_BY(mu_) = 0;
  PromptCacheStats st_ GUARDED_BY(mu_);
};

}  // namespace ember
