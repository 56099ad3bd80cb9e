// A request through the engine with the prompt cache in front of it (docs/cache-spec.md §2, §4):
//
//   1. Lookup(prompt, ns) -> view at p (or a miss); with a cold tier (TieredCache), an SSD entry strictly
//      longer than p is restored instead when that is estimated cheaper than recomputing the difference.
//      The sequence adopts the view or the restored state (a view is zero copy). Before prefilling, the
//      cold tier may relieve RAM pressure (write and free LRU entries) so the new KV fits the cap.
//   2. If the part still to prefill, L - p, is >= snapshot_min_tokens: prefill up to L - 1, store that
//      prompt-only state as its own entry (§2.5), then go on. Otherwise nothing is split.
//   3. Engine::Generate forwards the rest of the prompt, samples and decodes.
//   4. The sequence's exact state goes back into the cache: prompt + every generated token that was
//      forwarded (an EOS forwarded before it was read is in; a token sampled but never forwarded, the
//      last one or one a stop rejected, is not — Sequence::tokens() is the truth, never the sample list).
//
// Thread-safety: Generate/Prepare/PutBack may run concurrently from many threads, each request on its
// own Sequence; the engine serialises forward passes, the cache serialises its index, and KV blocks
// shared with the cache are never written (copy-on-write). The engine and cache must outlive this.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/prompt_cache.h"
#include "engine/engine.h"
#include "session/session_cache.h"
#include "session/session_request.h"
#include "tiered/tiered_cache.h"
#include "util/env.h"

namespace ember {

class CachedSession {
 public:
  // cache may be null (no caching).
  CachedSession(Engine& engine, PromptCache* cache, CachedSessionOptions options = {});
  // RAM + SSD: tiers->ram() is the RAM tier; tiers must outlive this.
  CachedSession(Engine& engine, TieredCache* tiers, CachedSessionOptions options = {});
  // No caching (keeps `CachedSession(engine, nullptr)` unambiguous).
  CachedSession(Engine& engine, std::nullptr_t, CachedSessionOptions options = {})
      : CachedSession(engine, static_cast<PromptCache*>(nullptr), std::move(options)) {}

  StatusOr<SessionResult> Generate(const SessionRequest& req, const TokenCallback& on_token);

  // Steps 1-2 alone: a sequence holding prompt[0, pending) with pending < len(prompt); the caller
  // forwards prompt[pending, L). Fills cached_tokens and snapshot_stored.
  struct Prepared {
    std::unique_ptr<Sequence> seq;
    size_t pending = 0;
    uint64_t cow_bytes_before = 0;  // the sequence's copy-on-write count before generating
  };
  StatusOr<Prepared> Prepare(const SessionRequest& req, SessionResult* result);
  // Step 4: inserts seq's exact state. Returns the entry length.
  StatusOr<int64_t> PutBack(const Sequence& seq, const std::string& ns);

 private:
  double Now() const;

  Engine& engine_;
  SessionCache cache_;
  CachedSessionOptions opts_;
};

}  // namespace ember
