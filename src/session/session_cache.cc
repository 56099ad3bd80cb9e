#include "session/session_cache.h"

#include <algorithm>

#include "cache/kv_entry_state.h"

namespace ember {

uint64_t KvBytesPerPosition(const KvConfig& kv) {
  return kv.block_bytes() / static_cast<uint64_t>(std::max(kv.block_size, 1));
}

StatusOr<int64_t> SessionCache::Adopt(const SessionRequest& req, Sequence& seq, SessionResult* result) {
  const std::span<const int32_t> prompt(req.prompt);
  const int64_t L = static_cast<int64_t>(prompt.size());
  result->prompt_tokens = L;
  if (!caching(req)) {
    if (on()) cache_->NoteBypass(L);
    return int64_t{0};
  }
  EMBER_ASSIGN_OR_RETURN(CacheHit hit, cache_->Lookup(prompt, req.ns));
  ColdLookup cold;
  if (tiers_ != nullptr && tiers_->cold_enabled()) {
    cold = tiers_->LookupCold(prompt, req.ns, hit.p);
    result->cold_decision = cold.decision;
  }
  if (cold.state) {
    // Restored blocks are this sequence's own (no donor shares them): nothing to note for copy-on-write.
    EMBER_RETURN_IF_ERROR(seq.Adopt(std::move(*cold.state), {prompt.begin(), prompt.begin() + cold.p}));
    result->cached_tokens = cold.p;
    result->tier = "ssd";
    result->restore_ms = cold.restore_ms;
    return cold.p;
  }
  if (hit.p == 0) return int64_t{0};
  auto* kv_view = dynamic_cast<KvEntryState*>(hit.view.get());
  if (kv_view == nullptr) return Internal("cached session: cache entry is not a KV state");
  EMBER_RETURN_IF_ERROR(seq.Adopt(std::move(*kv_view).Take(), {prompt.begin(), prompt.begin() + hit.p}));
  result->cached_tokens = hit.p;
  result->tier = "ram";
  return hit.p;
}

void SessionCache::Relieve(const KvConfig& kv, int64_t positions) {
  if (tiers_ == nullptr) return;
  // A relief failure leaves the entries resident; the request goes on either way.
  (void)tiers_->RelieveFor(static_cast<uint64_t>(std::max<int64_t>(positions, 0)) * KvBytesPerPosition(kv));
}

Status SessionCache::Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state, const std::string& ns) {
  if (tiers_ != nullptr) return tiers_->Insert(std::move(tokens), std::move(state), ns);
  return cache_->Insert(std::move(tokens), std::move(state), ns);
}

StatusOr<int64_t> SessionCache::PutBack(const Sequence& seq, const std::string& ns) {
  if (!on() || seq.n_pos() == 0) return int64_t{0};
  EMBER_ASSIGN_OR_RETURN(auto state, SnapshotKv(seq.kv(), seq.n_pos()));
  EMBER_RETURN_IF_ERROR(Insert(seq.tokens(), std::move(state), ns));
  return seq.n_pos();
}

void SessionCache::NotePrefill(int64_t tokens, double seconds) {
  if (tiers_ != nullptr) tiers_->NotePrefill(tokens, seconds);
}

void SessionCache::NoteCopiedBytes(uint64_t bytes) {
  if (on()) cache_->NoteCopiedBytes(bytes);
}

}  // namespace ember
