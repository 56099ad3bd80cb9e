#include "session/cached_session.h"

#include "cache/kv_entry_state.h"

namespace ember {

CachedSession::CachedSession(Engine& engine, PromptCache* cache, CachedSessionOptions options)
    : engine_(engine), cache_(cache, nullptr), opts_(std::move(options)) {}

CachedSession::CachedSession(Engine& engine, TieredCache* tiers, CachedSessionOptions options)
    : engine_(engine), cache_(tiers != nullptr ? &tiers->ram() : nullptr, tiers), opts_(std::move(options)) {}

double CachedSession::Now() const {
  Env* env = opts_.env != nullptr ? opts_.env : Env::Default();
  return static_cast<double>(env->MonotonicMicros()) / 1e6;
}

StatusOr<CachedSession::Prepared> CachedSession::Prepare(const SessionRequest& req, SessionResult* result) {
  if (req.prompt.empty()) return InvalidArgument("cached session: empty prompt");
  const std::span<const int32_t> prompt(req.prompt);
  const int64_t L = static_cast<int64_t>(prompt.size());
  Prepared out;
  EMBER_ASSIGN_OR_RETURN(out.seq, engine_.NewSequence());
  EMBER_ASSIGN_OR_RETURN(const int64_t p, cache_.Adopt(req, *out.seq, result));
  if (req.on_lookup) req.on_lookup(p);
  if (!cache_.caching(req)) return out;
  out.pending = static_cast<size_t>(p);
  // The KV this request will add (prompt rest + generated tokens) must fit beside the RAM tier (§4.8).
  cache_.Relieve(out.seq->kv().config(), L - p + std::max<int64_t>(req.generate.max_tokens, 0));
  if (L - p >= opts_.snapshot_min_tokens) {
    // Split the cold prefill at L - 1 so the prompt-only state really exists at that offset (§2.5).
    const auto head = prompt.subspan(out.pending, static_cast<size_t>(L - 1) - out.pending);
    const double t0 = Now();
    const int64_t before = out.seq->n_pos();
    EMBER_ASSIGN_OR_RETURN(const float* logits, engine_.Prefill(*out.seq, head, 0, req.generate.cancel));
    cache_.NotePrefill(out.seq->n_pos() - before, Now() - t0);
    if (logits == nullptr) {
      // Cancelled part way: no snapshot. Engine::Generate sees the (sticky) flag before its first chunk
      // and ends as cancelled; the part already forwarded still goes back into the cache.
      out.pending = static_cast<size_t>(out.seq->n_pos());
      return out;
    }
    out.pending = static_cast<size_t>(L - 1);
    EMBER_ASSIGN_OR_RETURN(auto snap, SnapshotKv(out.seq->kv(), L - 1));
    EMBER_RETURN_IF_ERROR(cache_.Insert({prompt.begin(), prompt.end() - 1}, std::move(snap), req.ns));
    result->snapshot_stored = true;
  }
  return out;
}

StatusOr<int64_t> CachedSession::PutBack(const Sequence& seq, const std::string& ns) {
  return cache_.PutBack(seq, ns);
}

StatusOr<SessionResult> CachedSession::Generate(const SessionRequest& req, const TokenCallback& on_token) {
  const double t0 = Now();
  // The cold tier's writer yields to this generation (bounded); relief inside Prepare is not deferred.
  WriteQueue::Foreground foreground;
  if (cache_.tiers() != nullptr) foreground = cache_.tiers()->ForegroundScope();
  SessionResult r;
  EMBER_ASSIGN_OR_RETURN(Prepared prep, Prepare(req, &r));
  prep.cow_bytes_before = prep.seq->kv().cow_bytes_copied();
  bool first = true;
  auto timed = [&](int32_t tok) {
    if (first) {
      r.ttft_s = Now() - t0;
      first = false;
    }
    return on_token ? on_token(tok) : true;
  };
  const std::span<const int32_t> rest = std::span<const int32_t>(req.prompt).subspan(prep.pending);
  EMBER_ASSIGN_OR_RETURN(r.gen, engine_.Generate(*prep.seq, rest, req.generate, timed));
  cache_.NotePrefill(r.gen.prompt_tokens, r.gen.prefill_s);
  // Forwarded by Prepare's split plus by Generate: the whole uncached prompt, unless cancelled.
  r.prefilled_tokens = static_cast<int64_t>(prep.pending) - r.cached_tokens + r.gen.prompt_tokens;
  // The state's own counter: exact for window groups and released blocks, unlike comparing block ids.
  r.cow_bytes_copied = prep.seq->kv().cow_bytes_copied() - prep.cow_bytes_before;
  if (cache_.caching(req)) {
    cache_.NoteCopiedBytes(r.cow_bytes_copied);
    EMBER_ASSIGN_OR_RETURN(r.entry_tokens, PutBack(*prep.seq, req.ns));
  }
  return r;
}

}  // namespace ember
