// The cache side of a session request (docs/cache-spec.md §2, §4), one implementation for both ways a
// request runs — CachedSession (forwarded alone) and BatchedSession (through the batch runner):
//
//   Adopt     RAM lookup; with the cold tier, the restore-or-recompute decision for a strictly longer SSD
//             entry; the sequence adopts the view (zero copy) or the restored state.
//   Relieve   before prefilling, the cold tier may write and free LRU entries so the KV this request
//             adds fits under the RAM cap (a failure leaves them resident; the request goes on).
//   Insert    an entry (the prompt-boundary snapshot), into the tiered cache when there is one.
//   PutBack   the sequence's exact state as an entry (prompt + every forwarded token).
//
// None of these forwards anything. Adopt and Relieve may do disk I/O (SSD restore, urgent relief writes),
// so a batched request calls them on its own thread, never on the step thread. Insert never waits for
// the disk (a spill is queued, the RAM index is in memory).
//
// Thread-safety: every method may be called concurrently from many threads (the caches serialise
// themselves). The caches must outlive this.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/prompt_cache.h"
#include "engine/engine.h"
#include "session/session_request.h"
#include "tiered/tiered_cache.h"

namespace ember {

class SessionCache {
 public:
  // cache may be null (no caching). With tiers, cache must be &tiers->ram().
  SessionCache(PromptCache* cache, TieredCache* tiers) : cache_(cache), tiers_(tiers) {}

  // Whether req looks up and inserts: a cache that is on, and tokens that identify the content.
  bool caching(const SessionRequest& req) const { return on() && !req.bypass_cache; }
  bool on() const { return cache_ != nullptr && cache_->enabled(); }
  TieredCache* tiers() const { return tiers_; }

  // Step 1: fills result's prompt_tokens, cached_tokens, tier, cold_decision, restore_ms and lets seq
  // (fresh) adopt what the lookup found. Returns the positions adopted (0: a miss or not caching).
  StatusOr<int64_t> Adopt(const SessionRequest& req, Sequence& seq, SessionResult* result);
  // The KV `positions` more positions of seq's geometry take must fit beside the RAM tier (§4.8).
  void Relieve(const KvConfig& kv, int64_t positions);
  Status Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state, const std::string& ns);
  // Inserts seq's exact state; returns the entry length (0: none, the cache is off or seq is empty).
  StatusOr<int64_t> PutBack(const Sequence& seq, const std::string& ns);
  // A request forwarded `tokens` prompt tokens in `seconds` (the cold tier's prefill-rate estimate).
  void NotePrefill(int64_t tokens, double seconds);
  void NoteCopiedBytes(uint64_t bytes);

 private:
  PromptCache* cache_;
  TieredCache* tiers_;
};

// KV bytes of one position of every layer (a block's bytes over its positions).
uint64_t KvBytesPerPosition(const KvConfig& kv);

}  // namespace ember
