// RAM prompt cache + SSD cold tier (docs/cache-spec.md §4): the one object a request path talks to when the
// cold tier is on. It composes, without changing their contracts:
//
//   PromptCache  the RAM LRU (pure RAM: it only calls the spill hook on eviction);
//   ColdStore    the on-disk index (single owner: every call but Stage() is made under store_mu_);
//   WriteQueue   the one serial background writer, byte-capped;
//   a maintenance thread that runs Tick() every ~100 ms: due write-behind snapshots and idle demotion.
//
// Flows:
//   lookup    RAM first; then ColdStore::Find for a strictly longer usable prefix; restore it unless
//             recomputing the extra tokens is estimated cheaper (measured read bandwidth vs measured
//             prefill rate). A failed restore is logged, the file deleted and counted (by ColdStore), and
//             the caller continues with the RAM candidate or a fresh prefill.
//   insert    into RAM, then a write-behind is (re)scheduled for exactly those tokens ~1 s later; when it
//             comes due the entry is persisted only if it is still in RAM and not already on disk.
//   spill     RAM eviction queues a write of the victim (skipped if already on disk).
//   demote    entries idle for demote_idle_s are written, and removed from RAM only after the write is
//             durable and only if still unused since.
//   relief    before a prefill whose KV would push RAM past its cap, least-recently-used entries are
//             written synchronously (urgent queue jobs) and freed; a failed write stops relief and the
//             entry stays in RAM.
//   flush     queues every pending write-behind, then waits until every queued job is durable.
//   foreground  a request holds ForegroundScope() while it generates; the writer does not start ordinary
//             jobs meanwhile (up to queue_max_defer_s each), so writes do not slow decode. Relief and
//             flush are never deferred (WriteQueue).
//
// Thread-safety: every method may be called from any thread. mu_ and store_mu_ are never held together,
// and neither is held while pushing to the queue or waiting on it (queue callbacks take them), nor while
// calling into the RAM cache (docs/conventions.md "Locks").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cache/prompt_cache.h"
#include "coldtier/cold_store.h"
#include "util/env.h"
#include "coldtier/write_queue.h"
#include "kv/kv_state.h"
#include "util/mutex.h"
#include "util/status.h"

namespace ember {

struct TieredCacheOptions {
  size_t ram_bytes = 0;                 // RAM tier cap (0: RAM tier off)
  // ---- Cold tier: off when root is empty ----
  Env* env = nullptr;                   // files and clocks (debounce, idleness, timings); null: Env::Default()
  std::string root;                     // --ssd-cache DIR
  std::string identity;                 // identity directory name (tiered/cache_identity.h)
  KvConfig kv;                          // the engine's KV geometry
  uint64_t disk_cap_bytes = 0;          // 0: unlimited
  bool verify_tensors = true;           // --ssd-cache-verify
  uint64_t queue_cap_bytes = 1ull << 30;
  double queue_max_defer_s = 5.0;       // longest a queued write waits for generation to pause
  double write_behind_s = 1.0;          // debounce; < 0: no write-behind
  double demote_idle_s = 300;           // 0: no idle demotion
  bool relieve_pressure = true;
  bool background = true;               // run the maintenance thread (tests call Tick() themselves)
};

// Cumulative-friendly millisecond histogram (per-bucket counts, not cumulative).
struct MsHistogram {
  std::vector<double> bounds;  // ascending upper bounds; +Inf implied
  std::vector<uint64_t> counts;
  uint64_t count = 0;
  double sum = 0;
  void Observe(double ms);
};

struct TieredStats {
  bool cold_enabled = false;
  size_t entries = 0;
  uint64_t bytes = 0, cap = 0;
  ColdStoreCounters store;
  WriteQueueStats queue;
  uint64_t tokens_served = 0;      // prompt tokens restored from SSD
  uint64_t tokens_recomputed = 0;  // prompt tokens prefilled (all tiers missed them)
  uint64_t restore_chosen = 0, recompute_chosen = 0;
  uint64_t spills_queued = 0, write_behind_queued = 0, already_durable = 0;
  uint64_t demotions = 0;
  uint64_t relief_writes = 0, relief_freed = 0, relief_failures = 0;
  uint64_t shrink_freed = 0;       // entries ShrinkTo removed (the KV budget's demotions/evictions)
  double last_flush_unix_s = 0;    // wall time of the last flush that made everything durable (0: never)
  double read_bytes_per_s = 0;     // measured by restores (0: not yet)
  double prefill_tokens_per_s = 0; // measured by requests (0: not yet)
  MsHistogram restore_ms;
};

// What the cold tier offers a request after the RAM lookup.
struct ColdLookup {
  int64_t p = 0;                 // positions restored (0: nothing restored)
  std::optional<KvState> state;  // trimmed to p when restored
  // "none" (no strictly longer entry), "restore", "recompute" (estimated cheaper), "failed" (restore
  // failed: file deleted, counted).
  std::string decision = "none";
  double restore_ms = 0;
};

class TieredCache {
 public:
  // Opens (scans) the cold store when options.root is set. Errors: the store's (bad identity, I/O).
  static StatusOr<std::unique_ptr<TieredCache>> Open(TieredCacheOptions options);
  ~TieredCache();
  TieredCache(const TieredCache&) = delete;
  TieredCache& operator=(const TieredCache&) = delete;

  PromptCache& ram() { return *ram_; }
  const PromptCache& ram() const { return *ram_; }
  bool cold_enabled() const { return store_ != nullptr; }
  // The Env it reads files and time from (Flush deadlines are on its MonotonicMicros).
  Env* env() const { return env_; }

  // After a RAM lookup that found ram_p usable positions: a strictly longer cold entry, restored.
  ColdLookup LookupCold(std::span<const int32_t> prompt, const std::string& ns, int64_t ram_p)
      EXCLUDES(mu_, store_mu_);
  // PromptCache::Insert, then schedules the write-behind of exactly these tokens.
  Status Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state, const std::string& ns)
      EXCLUDES(mu_, store_mu_);
  // Frees RAM (writing first what is not on disk) until `incoming_bytes` more fit under the RAM cap.
  Status RelieveFor(uint64_t incoming_bytes) EXCLUDES(mu_, store_mu_);
  // The KV budget's demand (session/kv_budget.h): frees least-recently-used RAM entries until the RAM
  // tier holds at most target_bytes. With the cold tier each is written first unless already durable
  // (demotion); a failed write does not keep it (memory outranks a future hit; counted as a relief
  // failure). Without the cold tier they are evicted. Returns the RAM tier's bytes afterwards (it may
  // stay above target only if nothing is left to free).
  uint64_t ShrinkTo(uint64_t target_bytes) EXCLUDES(mu_, store_mu_);
  // A request forwarded `tokens` prompt tokens in `seconds` (prefill rate for restore-or-recompute).
  void NotePrefill(int64_t tokens, double seconds) EXCLUDES(mu_);
  // Queues pending write-behinds and waits until every queued write is durable. FailedPrecondition if
  // the deadline (the Env's MonotonicMicros) passes first; IoError/NoSpace-style errors if a write failed
  // or was dropped meanwhile.
  Status Flush(int64_t deadline_us = WriteQueue::kNoDeadline) EXCLUDES(mu_, store_mu_);
  // Marks generation in progress for as long as the returned guard lives: background writes wait
  // (bounded) so they do not compete with decode for the CPU. A no-op without a cold tier.
  WriteQueue::Foreground ForegroundScope() { return WriteQueue::Foreground(queue_.get()); }
  // One maintenance pass: due write-behinds, idle demotion. The background thread calls it.
  void Tick() EXCLUDES(mu_, store_mu_);

  TieredStats stats() const EXCLUDES(mu_, store_mu_);

 private:
  explicit TieredCache(TieredCacheOptions options);
  int64_t Now() const;
  void Spill(std::shared_ptr<const CacheEntry> e) EXCLUDES(mu_, store_mu_);
  // Writes e to the store unless an entry with its tokens is already there (runs on the writer thread).
  Status Persist(const CacheEntry& e) EXCLUDES(mu_, store_mu_);
  // The one ColdStore call made without store_mu_: Stage reads no index state (coldtier/cold_store.h).
  const ColdStore& StoreForStage() const NO_THREAD_SAFETY_ANALYSIS { return *store_; }
  // Moves due (or, with all, every) pending write-behinds to the queue.
  void QueueWriteBehinds(bool all) EXCLUDES(mu_, store_mu_);
  void Maintain() EXCLUDES(maint_mu_);
  // Writes victim to the store unless already durable (an urgent job; waits for it).
  Status WriteNow(const std::shared_ptr<const CacheEntry>& victim) EXCLUDES(mu_, store_mu_);

  struct Pending {
    std::vector<int32_t> tokens;
    std::string ns;
    int64_t due_us = 0;
  };

  TieredCacheOptions opts_;
  Env* env_ = nullptr;
  std::unique_ptr<PromptCache> ram_;
  mutable Mutex store_mu_;
  std::unique_ptr<ColdStore> store_ PT_GUARDED_BY(store_mu_);  // null: no cold tier (set once, in Open)

  mutable Mutex mu_;
  // write-behind debounce, keyed by ns + exact tokens
  std::map<std::string, Pending> pending_ GUARDED_BY(mu_);
  std::set<const CacheEntry*> demoting_ GUARDED_BY(mu_);  // demotion jobs in flight (the job holds the entry)
  TieredStats st_ GUARDED_BY(mu_);
  uint64_t failure_logs_ GUARDED_BY(mu_) = 0;

  std::unique_ptr<WriteQueue> queue_;  // after the state its jobs touch: destroyed (stopped) first
  Mutex maint_mu_;
  CondVar maint_cv_;  // stopping_ was set
  bool stopping_ GUARDED_BY(maint_mu_) = false;
  std::thread maint_;
};

}  // namespace ember
