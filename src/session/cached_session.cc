#include "session/cached_session.h"

#include "cache/kv_entry_state.h"

namespace ember {

CachedSession::CachedSession(Engine& engine, PromptCache* cache, CachedSessionOptions options)
    : engine_(engine), cache_(cache), opts_(std::move(options)) {}

CachedSession::CachedSession(Engine& engine, TieredCache* tiers, CachedSessionOptions options)
    : engine_(engine), cache_(tiers != nullptr ? &tiers->ram() : nullptr), tiers_(tiers), opts_(std::move(options)) {}

Status CachedSession::InsertEntry(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state,
                                  const std::string& ns) {
  if (tiers_ != nullptr) return tiers_->Insert(std::move(tokens), std::move(state), ns);
  return cache_->Insert(std::move(tokens), std::move(state), ns);
}

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
  result->prompt_tokens = L;
  if (!caching(req)) {
    if (cache_ != nullptr && cache_->enabled()) cache_->NoteBypass(L);
    return out;
  }
  EMBER_ASSIGN_OR_RETURN(CacheHit hit, cache_->Lookup(prompt, req.ns));
  ColdLookup cold;
  if (tiers_ != nullptr && tiers_->cold_enabled()) {
    cold = tiers_->LookupCold(prompt, req.ns, hit.p);
    result->cold_decision = cold.decision;
  }
  if (cold.state) {
    // Restored blocks are this sequence's own (no donor shares them): nothing to note for copy-on-write.
    hit.p = cold.p;
    hit.view.reset();
    EMBER_RETURN_IF_ERROR(out.seq->Adopt(std::move(*cold.state), {prompt.begin(), prompt.begin() + hit.p}));
    out.pending = static_cast<size_t>(hit.p);
    result->cached_tokens = hit.p;
    result->tier = "ssd";
    result->restore_ms = cold.restore_ms;
  } else if (hit.p > 0) {
    auto* kv_view = dynamic_cast<KvEntryState*>(hit.view.get());
    if (kv_view == nullptr) return Internal("cached session: cache entry is not a KV state");
    EMBER_RETURN_IF_ERROR(out.seq->Adopt(std::move(*kv_view).Take(), {prompt.begin(), prompt.begin() + hit.p}));
    out.pending = static_cast<size_t>(hit.p);
    result->cached_tokens = hit.p;
    result->tier = "ram";
  }
  if (tiers_ != nullptr) {
    // The KV this request will add (prompt rest + generated tokens) must fit beside the RAM tier (§4.8).
    // A relief failure leaves the entries resident; the request goes on either way.
    const KvConfig kc = out.seq->kv().config();
    const uint64_t per_pos = kc.block_bytes() / static_cast<uint64_t>(std::max(kc.block_size, 1));
    const uint64_t positions = static_cast<uint64_t>(L - hit.p + std::max<int64_t>(req.generate.max_tokens, 0));
    (void)tiers_->RelieveFor(positions * per_pos);
  }
  if (L - hit.p >= opts_.snapshot_min_tokens) {
    // Split the cold prefill at L - 1 so the prompt-only state really exists at that offset (§2.5).
    const auto head = prompt.subspan(out.pending, static_cast<size_t>(L - 1) - out.pending);
    const double t0 = Now();
    const int64_t before = out.seq->n_pos();
    EMBER_ASSIGN_OR_RETURN(const float* logits, engine_.Prefill(*out.seq, head, 0, req.generate.cancel));
    if (tiers_ != nullptr) tiers_->NotePrefill(out.seq->n_pos() - before, Now() - t0);
    if (logits == nullptr) {
      // Cancelled part way: no snapshot. Engine::Generate sees the (sticky) flag before its first chunk
      // and ends as cancelled; the part already forwarded still goes back into the cache.
      out.pending = static_cast<size_t>(out.seq->n_pos());
      return out;
    }
    out.pending = static_cast<size_t>(L - 1);
    EMBER_ASSIGN_OR_RETURN(auto snap, SnapshotKv(out.seq->kv(), L - 1));
    EMBER_RETURN_IF_ERROR(InsertEntry({prompt.begin(), prompt.end() - 1}, std::move(snap), req.ns));
    result->snapshot_stored = true;
  }
  return out;
}

StatusOr<int64_t> CachedSession::PutBack(const Sequence& seq, const std::string& ns) {
  if (cache_ == nullptr || !cache_->enabled() || seq.n_pos() == 0) return int64_t{0};
  EMBER_ASSIGN_OR_RETURN(auto state, SnapshotKv(seq.kv(), seq.n_pos()));
  EMBER_RETURN_IF_ERROR(InsertEntry(seq.tokens(), std::move(state), ns));
  return seq.n_pos();
}

StatusOr<SessionResult> CachedSession::Generate(const SessionRequest& req, const TokenCallback& on_token) {
  const double t0 = Now();
  // The cold tier's writer yields to this generation (bounded); relief inside Prepare is not deferred.
  WriteQueue::Foreground foreground;
  if (tiers_ != nullptr) foreground = tiers_->ForegroundScope();
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
  if (tiers_ != nullptr) tiers_->NotePrefill(r.gen.prompt_tokens, r.gen.prefill_s);
  // Forwarded by Prepare's split plus by Generate: the whole uncached prompt, unless cancelled.
  r.prefilled_tokens = static_cast<int64_t>(prep.pending) - r.cached_tokens + r.gen.prompt_tokens;
  // The state's own counter: exact for window groups and released blocks, unlike comparing block ids.
  r.cow_bytes_copied = prep.seq->kv().cow_bytes_copied() - prep.cow_bytes_before;
  if (caching(req)) {
    cache_->NoteCopiedBytes(r.cow_bytes_copied);
    EMBER_ASSIGN_OR_RETURN(r.entry_tokens, PutBack(*prep.seq, req.ns));
  }
  return r;
}

}  // namespace ember
