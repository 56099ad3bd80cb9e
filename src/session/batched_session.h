// A request through the step loop with the prompt cache in front of it (docs/cache-spec.md §2, §4),
// either through a BatchRunner shared by many concurrent requests (continuous batching, issues #16,
// #30) or, without a runner, through a step loop of its own on the caller's thread (CachedSession:
// the serial path is the same code with a batch of one). Per request, on the CALLER's thread:
//
//   1. the cache lookup and cold-tier restore decision, adopting the view or restored state, and RAM
//      relief (SessionCache: the same code as CachedSession). These may do disk I/O, so they never run
//      on the runner's step thread, which every running sequence waits on.
//   2. BatchRunner::Run (or RunAlone) with share_key = the namespace: a prefix that another running sequence of the
//      same namespace is prefilling (or holds) is shared zero-copy instead of computed twice. With a KV
//      budget (options.budget) the job reserves ReservationBytes(L, adopted, max_tokens) in the runner's
//      queue (its only admission) and this thread makes room for it in the RAM cache (make_room).
//      When L - p >= snapshot_min_tokens (p: positions adopted from the cache), the on_prompt_done hook
//      stores the prompt-only state at L - 1 as its own entry (§2.5), on the step thread: a zero-copy
//      view of the sequence's state taken before its first generated token is forwarded, inserted into
//      the cache (an insert never waits for the disk: a spill is only queued).
//   3. after Run returns: the sequence's exact state goes back into the cache, as CachedSession's.
//
// cached_tokens counts positions this request did not compute: adopted from the cache plus shared from
// in-flight sequences (a shared prefix counts as tier "ram"). Tokens and logits are bitwise those of a
// solo CachedSession run: the batched forward is batch invariant and the runner samples exactly as
// Engine::Generate does.
//
// Thread-safety: Generate may be called from any number of threads at once. The engine, runner and
// caches must outlive this.
#pragma once

#include "cache/prompt_cache.h"
#include "engine/batch_runner.h"
#include "engine/engine.h"
#include "session/session_cache.h"
#include "session/session_request.h"
#include "tiered/tiered_cache.h"

namespace ember {

class BatchedSession {
 public:
  // cache may be null (no caching). runner null: each request runs alone on its caller's thread.
  BatchedSession(Engine& engine, BatchRunner* runner, PromptCache* cache, CachedSessionOptions options = {});
  // RAM + SSD: tiers->ram() is the RAM tier.
  BatchedSession(Engine& engine, BatchRunner* runner, TieredCache* tiers, CachedSessionOptions options = {});
  BatchedSession(Engine& engine, BatchRunner& runner, PromptCache* cache, CachedSessionOptions options = {})
      : BatchedSession(engine, &runner, cache, std::move(options)) {}
  BatchedSession(Engine& engine, BatchRunner& runner, TieredCache* tiers, CachedSessionOptions options = {})
      : BatchedSession(engine, &runner, tiers, std::move(options)) {}

  StatusOr<SessionResult> Generate(const SessionRequest& req, const TokenCallback& on_token);

 private:
  double Now() const;
  std::vector<int64_t> CheckpointPositions(std::span<const int32_t> prompt, int64_t adopted) const;

  Engine& engine_;
  BatchRunner* runner_;
  SessionCache cache_;
  CachedSessionOptions opts_;
};

}  // namespace ember
