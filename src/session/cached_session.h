// A request through the engine with the prompt cache in front of it, run alone on the caller's thread
// (the CLI's `chat`, the SSD bench): BatchedSession without a runner, so
// the serial path is the batched path with a batch of one (session/batched_session.h has the contract:
// lookup and restore, the prompt-boundary snapshot, generation through the step loop, put-back of the
// sequence's exact state).
//
// Thread-safety: Generate may run concurrently from many threads, each request on its own sequence.
#pragma once

#include <cstddef>

#include "cache/prompt_cache.h"
#include "engine/engine.h"
#include "session/batched_session.h"
#include "session/session_request.h"
#include "tiered/tiered_cache.h"

namespace ember {

class CachedSession {
 public:
  // cache may be null (no caching).
  CachedSession(Engine& engine, PromptCache* cache, CachedSessionOptions options = {})
      : impl_(engine, static_cast<BatchRunner*>(nullptr), cache, std::move(options)) {}
  // RAM + SSD: tiers->ram() is the RAM tier; tiers must outlive this.
  CachedSession(Engine& engine, TieredCache* tiers, CachedSessionOptions options = {})
      : impl_(engine, static_cast<BatchRunner*>(nullptr), tiers, std::move(options)) {}
  // No caching (keeps `CachedSession(engine, nullptr)` unambiguous).
  CachedSession(Engine& engine, std::nullptr_t, CachedSessionOptions options = {})
      : CachedSession(engine, static_cast<PromptCache*>(nullptr), std::move(options)) {}

  StatusOr<SessionResult> Generate(const SessionRequest& req, const TokenCallback& on_token) {
    return impl_.Generate(req, on_token);
  }

 private:
  BatchedSession impl_;
};

}  // namespace ember
