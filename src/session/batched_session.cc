#include "session/batched_session.h"

#include <algorithm>

#include "cache/kv_entry_state.h"
#include "engine/step_loop.h"
#include "session/kv_budget.h"

namespace ember {
namespace {

// The token each chat turn starts with in the families ember's templates know (ChatML / Qwen, Llama 3,
// Gemma); -1 when the vocabulary has none of them.
int32_t TurnStartToken(const Tokenizer& tok) {
  for (const char* text : {"<|im_start|>", "<|start_header_id|>", "<start_of_turn>"}) {
    if (const int32_t id = tok.TokenId(text); id >= 0) return id;
  }
  return -1;
}

}  // namespace

BatchedSession::BatchedSession(Engine& engine, BatchRunner* runner, PromptCache* cache, CachedSessionOptions options)
    : engine_(engine), runner_(runner), cache_(cache, nullptr), opts_(std::move(options)) {}

BatchedSession::BatchedSession(Engine& engine, BatchRunner* runner, TieredCache* tiers, CachedSessionOptions options)
    : engine_(engine), runner_(runner), cache_(tiers != nullptr ? &tiers->ram() : nullptr, tiers),
      opts_(std::move(options)) {}

double BatchedSession::Now() const {
  Env* env = opts_.env != nullptr ? opts_.env : Env::Default();
  return static_cast<double>(env->MonotonicMicros()) / 1e6;
}

// Where a hybrid keeps its recurrent state while prefilling past `adopted` (docs/hybrid.md): before each
// turn start (the chat template's turn token), every checkpoint_every tokens, and at L - 1 — which serves
// the same prompt again (its last token is forwarded anew) and any longer one.
std::vector<int64_t> BatchedSession::CheckpointPositions(std::span<const int32_t> prompt, int64_t adopted) const {
  const int64_t L = static_cast<int64_t>(prompt.size());
  std::vector<int64_t> out;
  const Tokenizer* tok = engine_.tokenizer();
  const int32_t turn = tok != nullptr ? TurnStartToken(*tok) : -1;
  const int64_t every = opts_.checkpoint_every;
  for (int64_t i = adopted + 1; i < L - 1; ++i) {
    if ((turn >= 0 && prompt[static_cast<size_t>(i)] == turn) || (every > 0 && i % every == 0)) out.push_back(i);
  }
  if (L - 1 > adopted) out.push_back(L - 1);
  return out;
}

StatusOr<SessionResult> BatchedSession::Generate(const SessionRequest& req, const TokenCallback& on_token) {
  if (req.prompt.empty()) return InvalidArgument("session: empty prompt");
  const double t0 = Now();
  WriteQueue::Foreground foreground;  // the cold tier's writer yields while this request generates
  if (cache_.tiers() != nullptr) foreground = cache_.tiers()->ForegroundScope();
  const std::span<const int32_t> prompt(req.prompt);
  const int64_t L = static_cast<int64_t>(prompt.size());
  const bool caching = cache_.caching(req);
  SessionResult r;
  // Step 1, on this thread: lookup, restore (disk), adopt, relief (disk).
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Sequence> seq, engine_.NewSequence());
  EMBER_ASSIGN_OR_RETURN(const int64_t p, cache_.Adopt(req, *seq, &r));
  if (caching) cache_.Relieve(seq->kv().config(), L - p + std::max<int64_t>(req.generate.max_tokens, 0));
  const uint64_t cow_before = seq->kv().cow_bytes_copied();

  BatchJob job;
  job.seq = seq.get();
  job.prompt = prompt;
  job.options = req.generate;
  // Bypassed tokens do not identify their content (image placeholders): equal ids are no shared prefix.
  // The runner shares only under non-empty keys; "" is a namespace too (the default one).
  if (!req.bypass_cache) job.share_key = "ns:" + req.ns;
  if (opts_.budget != nullptr) {  // reserved after the lookup: adopted positions are the cache's bytes
    KvBudget* budget = opts_.budget;
    job.kv_bytes = static_cast<int64_t>(budget->ReservationBytes(L, p, req.generate.max_tokens));
    job.make_room = [budget](int64_t outside_bytes) { budget->ShrinkCacheTo(outside_bytes); };
    // Alone, nothing else is reserved: room for this job is all it takes.
    if (runner_ == nullptr) budget->ShrinkCacheTo(static_cast<int64_t>(budget->budget_bytes()) - job.kv_bytes);
  }
  // Step 2's snapshot, on the step thread, between the last prompt position and the first sample.
  Status snapshot_status;
  if (caching && L - p >= opts_.snapshot_min_tokens) {
    job.on_prompt_done = [&](const Sequence& s) {
      // A window layer that already released what L - 1 needs cannot be viewed there: no snapshot.
      if (s.n_pos() != L || !s.kv().CanTrimTo(L - 1)) return;
      StatusOr<std::unique_ptr<EntryState>> snap = SnapshotKv(s.kv(), L - 1);
      snapshot_status = snap.ok() ? cache_.Insert({prompt.begin(), prompt.end() - 1}, std::move(snap).value(), req.ns)
                                  : snap.status();
      r.snapshot_stored = snapshot_status.ok();
    };
  }
  // Hybrids: checkpoints of the recurrent state, kept as cache entries sharing the attention blocks.
  if (caching && seq->kv().config().has_recurrent()) {
    job.checkpoints = CheckpointPositions(prompt, p);
    job.on_checkpoint = [&](const Sequence& s) {
      if (!snapshot_status.ok()) return;
      StatusOr<std::unique_ptr<EntryState>> snap = SnapshotKv(s.kv(), s.n_pos());
      snapshot_status = snap.ok() ? cache_.Insert({prompt.begin(), prompt.begin() + s.n_pos()}, std::move(snap).value(),
                                                  req.ns)
                                  : snap.status();
      r.checkpoints_stored += snapshot_status.ok() ? 1 : 0;
    };
  }
  bool first = true;
  job.on_token = [&](int32_t tok) {
    if (first) {
      r.ttft_s = Now() - t0;
      first = false;
    }
    return on_token ? on_token(tok) : true;
  };
  // Run returns after the step thread's last use of the callbacks: what they wrote is visible here.
  EMBER_ASSIGN_OR_RETURN(BatchJobResult br,
                         runner_ != nullptr ? runner_->Run(std::move(job)) : RunAlone(engine_, std::move(job)));
  EMBER_RETURN_IF_ERROR(snapshot_status);

  // Step 3, on this thread.
  r.gen = std::move(br.gen);
  r.queued_s = br.queued_s;
  r.shared_tokens = br.shared_tokens;
  r.cached_tokens = p + br.shared_tokens;
  if (p == 0 && br.shared_tokens > 0) r.tier = "ram";  // another lane's KV, in RAM
  r.prefilled_tokens = r.gen.prompt_tokens;
  cache_.NotePrefill(r.gen.prompt_tokens, br.prefill_compute_s);  // its share of the steps, not wall time
  // Adopting an in-flight prefix replaces the state (and restarts its counter) before anything is copied.
  const uint64_t cow_after = seq->kv().cow_bytes_copied();
  r.cow_bytes_copied = cow_after >= cow_before ? cow_after - cow_before : cow_after;
  if (caching) {
    cache_.NoteCopiedBytes(r.cow_bytes_copied);
    EMBER_ASSIGN_OR_RETURN(r.entry_tokens, cache_.PutBack(*seq, req.ns));
  }
  return r;
}

}  // namespace ember
