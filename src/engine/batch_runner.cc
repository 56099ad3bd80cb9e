// The step loop of engine/batch_runner.h. One thread owns every admitted sequence while its Run() call
// waits; each iteration: admit from the queue, drop cancelled jobs, let followers adopt shared prefixes,
// release finished jobs, then one Engine::Step and the sampling of every sequence that got logits.
#include "engine/batch_runner.h"

#include <algorithm>
#include <exception>

#include "engine/drafter.h"
#include "grammar/mask_budget.h"
#include "util/stopwatch.h"

namespace ember {

struct BatchRunner::Active {
  BatchJob job;
  int64_t prompt_len = 0;
  uint64_t order = 0;             // admission order: a sequence only follows earlier ones
  std::unique_ptr<Sampler> sampler;
  bool decoding = false;          // prompt done; `pending` is the next token to forward
  int32_t pending = 0;
  // Speculative decoding: the drafter and its pacer (null when off), this step's decode slice
  // (pending + drafts) and the positions held before it.
  std::unique_ptr<Drafter> drafter;
  std::unique_ptr<DraftPacer> pacer;
  int draft_max = 0;
  std::vector<int32_t> verify;
  int64_t base = 0;
  bool waiting_on_share = false;  // this step: an earlier sequence is computing our prefix
  bool finished = false;          // result/status final; released at the next sweep
  bool released = false;          // Run() may return (guarded by mu_)
  int64_t start_us = 0, admit_us = 0, prompt_done_us = 0;
  BatchJobResult result;
  Status status;
  TokenLogprobs lp;
};

namespace {

int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

}  // namespace

BatchRunner::BatchRunner(Engine& engine, BatchRunnerOptions options)
    : engine_(engine), opts_(std::move(options)), env_(opts_.env != nullptr ? opts_.env : Env::Default()) {
  opts_.max_seqs = std::max(1, opts_.max_seqs);
  opts_.step_tokens = std::max<int64_t>(1, opts_.step_tokens);
  opts_.draft_rows_per_step = std::max(0, opts_.draft_rows_per_step);
  st_.max_seqs = opts_.max_seqs;
  thread_ = std::thread([this] { StepLoop(); });
}

BatchRunner::~BatchRunner() { Shutdown(); }

void BatchRunner::Shutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

BatchRunnerStats BatchRunner::stats() const {
  MutexLock lock(&mu_);
  BatchRunnerStats s = st_;
  s.waiting = static_cast<int>(waiting_.size());
  return s;
}

StatusOr<BatchJobResult> BatchRunner::Run(BatchJob job) {
  if (job.seq == nullptr) return InvalidArgument("batch: no sequence");
  const int64_t L = static_cast<int64_t>(job.prompt.size());
  const int64_t held = job.seq->n_pos();
  if (L == 0) return InvalidArgument("batch: empty prompt");
  if (held >= L) return InvalidArgument("batch: the sequence already holds the whole prompt (nothing to forward)");
  if (!std::equal(job.seq->tokens().begin(), job.seq->tokens().end(), job.prompt.begin())) {
    return InvalidArgument("batch: the sequence's tokens are not a prefix of the prompt");
  }
  EMBER_RETURN_IF_ERROR(job.options.sampling.Validate());
  EMBER_RETURN_IF_ERROR(job.options.speculative.Validate());
  if (job.options.top_logprobs < -1 || job.options.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("batch: top_logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  auto a = std::make_shared<Active>();
  a->prompt_len = L;
  a->job = std::move(job);
  a->start_us = env_->MonotonicMicros();
  MutexLock lock(&mu_);
  if (stopping_) return FailedPrecondition("batch: the runner is shutting down");
  waiting_.push_back(a);
  cv_.SignalAll();
  while (!a->released) cv_.Wait(&mu_);
  if (!a->status.ok()) return a->status;
  return std::move(a->result);
}

namespace {

double Seconds(int64_t from_us, int64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

}  // namespace

void BatchRunner::StepLoop() {
  const Tokenizer* tok = engine_.tokenizer();
  const int64_t n_vocab = engine_.model().config().n_vocab;
  const int64_t prefill_only_budget = std::max(opts_.step_tokens, engine_.options().ubatch);
  std::unique_ptr<StepContext> ctx;
  std::vector<std::shared_ptr<Active>> active;  // the step thread's copy of active_
  uint64_t next_order = 0;

  auto finish = [](Active& a, StopReason stop) {
    a.result.gen.stop = stop;
    a.finished = true;
  };
  auto fail = [](Active& a, Status st) {
    a.status = std::move(st);
    a.finished = true;
  };
  auto cancelled = [](const Active& a) {
    return a.job.options.cancel != nullptr && a.job.options.cancel->load(std::memory_order_relaxed);
  };
  // One turn of Engine::Generate's loop for a sequence whose logits are ready: the same checks in the
  // same order, so the tokens, stop reason and RNG use are those of a solo run.
  // draft >= 0: the row verifies that drafted token (Sampler::SampleDraft).
  auto sample = [&](Active& a, const float* logits, int32_t draft) {
    GenerateResult& r = a.result.gen;
    const GenerateOptions& o = a.job.options;
    if (static_cast<int64_t>(r.tokens.size()) >= o.max_tokens) return finish(a, StopReason::kLength);
    if (cancelled(a)) return finish(a, StopReason::kCancelled);
    const bool want_lp = o.top_logprobs >= 0;
    const int32_t t = draft >= 0 ? a.sampler->SampleDraft(logits, draft, want_lp ? o.top_logprobs : -1, &a.lp)
                      : want_lp ? a.sampler->Sample(logits, o.top_logprobs, &a.lp)
                                : a.sampler->Sample(logits);
    if (o.constraint != nullptr) {
      Status accepted = o.constraint->Accept(t);
      if (!accepted.ok()) return fail(a, std::move(accepted));
    }
    a.sampler->Accept(t);
    r.tokens.push_back(t);
    if (draft >= 0 && t == draft) ++r.draft_accepted;
    if (want_lp) {
      if (o.on_logprobs) o.on_logprobs(a.lp);
      r.logprobs.push_back(a.lp);
    }
    if (r.tokens.size() == 1) r.ttft_s = Seconds(a.start_us, env_->MonotonicMicros());
    const bool keep_going = a.job.on_token ? a.job.on_token(t) : true;
    if (o.stop_at_eog && tok != nullptr && tok->IsEog(t)) return finish(a, StopReason::kEog);
    if (!keep_going) return finish(a, StopReason::kCallback);
    if (o.constraint != nullptr && o.constraint->OnlyEndCanFollow()) return finish(a, StopReason::kEog);
    if (static_cast<int64_t>(r.tokens.size()) == o.max_tokens) return finish(a, StopReason::kLength);
    a.pending = t;
  };
  auto guarded = [&](Active& a, const auto& fn) {  // a callback that throws fails its own job only
    try {
      fn();
    } catch (const std::exception& e) {
      fail(a, Internal(std::string("generation failed: ") + e.what()));
    } catch (...) {
      fail(a, Internal("generation failed: an exception that is not a std::exception"));
    }
  };
  // Work toward a sequence's next mask, at most about `max_work` units (grammar/mask_budget.h). false:
  // not ready, so the sequence sits out this step (or ends its verify walk) instead of holding the
  // others up; a spent mask budget fails its job.
  auto mask_ready = [&](Active& a, uint64_t max_work) {
    grammar::TokenConstraint* c = a.job.options.constraint;
    if (c == nullptr) return true;
    bool ready = false;
    guarded(a, [&] {
      StatusOr<bool> r = c->Prepare(max_work);
      if (!r.ok()) return fail(a, r.status());
      ready = *r;
    });
    if (!ready && !a.finished) {
      MutexLock lock(&mu_);
      ++st_.mask_waits;
    }
    return ready && !a.finished;
  };

  while (true) {
    // ---- admit ----
    std::vector<std::shared_ptr<Active>> admitted;
    {
      MutexLock lock(&mu_);
      while (active.empty() && waiting_.empty() && !stopping_) cv_.Wait(&mu_);
      if (active.empty() && waiting_.empty() && stopping_) return;
      while (static_cast<int>(active.size() + admitted.size()) < opts_.max_seqs && !waiting_.empty()) {
        admitted.push_back(std::move(waiting_.front()));
        waiting_.erase(waiting_.begin());
      }
    }
    for (auto& a : admitted) {
      a->order = next_order++;
      a->admit_us = env_->MonotonicMicros();
      a->result.queued_s = Seconds(a->start_us, a->admit_us);
      guarded(*a, [&] {
        a->sampler = std::make_unique<Sampler>(a->job.options.sampling, n_vocab);
        a->sampler->set_constraint(a->job.options.constraint);
        for (int32_t t : a->job.prompt) a->sampler->Accept(t);  // the penalty window sees the whole context
        if (a->job.options.speculative.enabled() && opts_.draft_rows_per_step > 0) {
          StatusOr<std::unique_ptr<Drafter>> d = MakeDrafter(a->job.options.speculative);
          if (!d.ok()) return fail(*a, d.status());
          a->drafter = std::move(*d);
          a->draft_max = MaxDraftTokens(engine_, a->job.options.speculative.draft_max);
          a->pacer = std::make_unique<DraftPacer>(a->draft_max);
        }
      });
      active.push_back(std::move(a));
    }
    if (!ctx) {
      ctx = engine_.NewStepContext(prefill_only_budget + opts_.max_seqs + opts_.draft_rows_per_step, opts_.max_seqs,
                                   opts_.max_seqs + opts_.draft_rows_per_step);
    }

    // ---- cancellations ----
    for (auto& a : active) {
      if (!a->finished && cancelled(*a)) {
        finish(*a, StopReason::kCancelled);
        if (!a->decoding) a->result.gen.prefill_s = Seconds(a->start_us, env_->MonotonicMicros());
      }
    }

    // ---- in-flight prefix sharing (before any finished sequence is released: its state may be viewed) ----
    for (auto& jp : active) {
      Active& j = *jp;
      j.waiting_on_share = false;
      if (j.finished || j.decoding || j.job.share_key.empty()) continue;
      const std::span<const int32_t> want = j.job.prompt.first(static_cast<size_t>(j.prompt_len - 1));
      int64_t best = j.job.seq->n_pos();
      const Active* donor = nullptr;
      int64_t will_reach = best;
      for (auto& lp : active) {
        const Active& l = *lp;
        if (l.order >= j.order || l.job.share_key != j.job.share_key || !l.status.ok()) continue;
        const KvState& lkv = l.job.seq->kv();
        const int64_t held = std::min(CommonPrefix(want, l.job.seq->tokens()), lkv.n_pos());
        if (held > best && lkv.CanTrimTo(held)) {
          best = held;
          donor = &l;
        }
        if (!l.finished && !l.decoding) will_reach = std::max(will_reach, CommonPrefix(want, l.job.prompt));
      }
      if (donor != nullptr) {
        guarded(j, [&] {
          StatusOr<KvState> view = donor->job.seq->kv().View(best);
          if (!view.ok()) return;  // not shareable after all: compute it
          const int64_t before = j.job.seq->n_pos();
          Status st = j.job.seq->Adopt(std::move(*view), {want.begin(), want.begin() + best});
          if (!st.ok()) return fail(j, std::move(st));
          j.result.shared_tokens += best - before;
        });
      }
      // An earlier sequence is still prefilling more of our prefix: wait for it instead of computing it
      // too (it is ahead in admission order, so it gets step rows first).
      j.waiting_on_share = !j.finished && will_reach > j.job.seq->n_pos();
    }

    // ---- release finished jobs ----
    {
      bool any = false;
      MutexLock lock(&mu_);
      for (auto& a : active) {
        if (!a->finished) continue;
        any = true;
        if (a->decoding) a->result.gen.decode_s = Seconds(a->prompt_done_us, env_->MonotonicMicros());
        if (!a->status.ok()) {
          ++st_.failed;
        } else if (a->result.gen.stop == StopReason::kCancelled) {
          ++st_.cancelled;
        } else {
          ++st_.completed;
        }
        st_.shared_tokens += static_cast<uint64_t>(a->result.shared_tokens);
        a->released = true;
      }
      if (any) {
        active.erase(std::remove_if(active.begin(), active.end(), [](const auto& a) { return a->finished; }),
                     active.end());
        cv_.SignalAll();
      }
      int pre = 0, dec = 0;
      for (auto& a : active) (a->decoding ? dec : pre)++;
      st_.running = static_cast<int>(active.size());
      st_.prefilling = pre;
      st_.decoding = dec;
    }
    if (active.empty()) continue;

    // ---- one step: every decode token, then prompt chunks in admission order within the budget ----
    std::vector<StepSlice> slices;
    std::vector<Active*> owner;
    std::vector<bool> prompt_slice;
    int64_t decode_rows = 0, draft_rows = 0;
    int draft_room = opts_.draft_rows_per_step;
    const int64_t n_ctx = engine_.options().n_ctx;
    for (auto& a : active) {
      if (!a->decoding || a->finished || !mask_ready(*a, grammar::kMaskStepWork)) continue;
      a->base = a->job.seq->n_pos();
      a->verify.assign(1, a->pending);
      if (a->drafter) {
        const int64_t left = a->job.options.max_tokens - static_cast<int64_t>(a->result.gen.tokens.size());
        const int limit = static_cast<int>(
            std::min<int64_t>({a->pacer->Next(), left - 1, n_ctx - a->base - 1, draft_room}));
        if (limit > 0) {
          guarded(*a, [&] { a->drafter->Draft(a->job.seq->tokens(), a->pending, limit, &a->verify); });
        }
        if (a->finished) continue;
        draft_room -= static_cast<int>(a->verify.size()) - 1;
      }
      const bool spec = a->verify.size() > 1;
      slices.push_back({a->job.seq, a->verify, true, spec});
      owner.push_back(a.get());
      prompt_slice.push_back(false);
      decode_rows += static_cast<int64_t>(a->verify.size());
      draft_rows += static_cast<int64_t>(a->verify.size()) - 1;
    }
    const int64_t budget = decode_rows > 0 ? opts_.step_tokens : prefill_only_budget;
    int64_t room = std::max<int64_t>(budget - decode_rows, decode_rows > 0 ? 1 : 0);
    int64_t prompt_rows = 0;
    for (auto& a : active) {
      if (a->decoding || a->finished || a->waiting_on_share || room <= 0) continue;
      const int64_t at = a->job.seq->n_pos();
      int64_t n = std::min(room, a->prompt_len - at);
      // The last prompt row's logits are sampled right after the step: its mask must be ready by then.
      if (!mask_ready(*a, grammar::kMaskStepWork) && at + n == a->prompt_len) --n;
      if (a->finished || n <= 0) continue;
      slices.push_back({a->job.seq, a->job.prompt.subspan(static_cast<size_t>(at), static_cast<size_t>(n)),
                        at + n == a->prompt_len});
      owner.push_back(a.get());
      prompt_slice.push_back(true);
      room -= n;
      prompt_rows += n;
    }
    if (slices.empty()) {
      // Everyone left is waiting on a shared prefix whose donor finished or failed this turn: the next
      // sharing pass sees that and lets them compute. Never spin without progress otherwise.
      continue;
    }
    const int64_t t0 = env_->MonotonicMicros();
    int64_t accepted_rows = 0;
    std::vector<Status> status;
    Status step_status;
    try {
      step_status = engine_.Step(*ctx, slices, &status);
    } catch (const std::exception& e) {
      step_status = Internal(std::string("step failed: ") + e.what());
    } catch (...) {
      step_status = Internal("step failed");
    }
    for (size_t i = 0; i < slices.size(); ++i) {
      Active& a = *owner[i];
      if (!step_status.ok()) {
        fail(a, step_status);
        continue;
      }
      if (!status[i].ok()) {
        fail(a, status[i]);
        continue;
      }
      if (a.decoding) {
        // Rows in order, as plain decode would sample them, until a stop or a rejected draft; then the
        // positions past that row are cut off again (they hold drafts that were not emitted).
        const int nd = static_cast<int>(a.verify.size()) - 1;
        const float* rows = ctx->logits(i);
        int row = 0;
        for (; row <= nd; ++row) {
          const int32_t draft = row < nd ? a.verify[static_cast<size_t>(row) + 1] : -1;
          guarded(a, [&] { sample(a, rows + static_cast<int64_t>(row) * n_vocab, draft); });
          if (a.finished || a.pending != draft) break;
          // A drafted row is verified only with its mask ready (as Engine::Generate): never computed here.
          if (!mask_ready(a, 0)) break;
        }
        if (nd > 0) {
          a.pacer->Record(nd, std::min(row, nd));
          a.result.gen.draft_tokens += nd;
          ++a.result.gen.drafts;
          accepted_rows += std::min(row, nd);
          if (a.job.seq->n_pos() > a.base + 1 + row) {
            Status st = a.job.seq->TrimTo(a.base + 1 + row);
            if (!st.ok()) fail(a, std::move(st));
          }
        }
        a.result.gen.decode_tokens += 1 + std::min(row, nd);
        continue;
      }
      a.result.gen.prompt_tokens += static_cast<int64_t>(slices[i].tokens.size());
      if (!slices[i].logits) continue;
      a.prompt_done_us = env_->MonotonicMicros();
      a.result.gen.prefill_s = Seconds(a.start_us, a.prompt_done_us);
      a.decoding = true;
      guarded(a, [&] {
        if (a.job.on_prompt_done) a.job.on_prompt_done(*a.job.seq);
        sample(a, ctx->logits(i), -1);
      });
    }
    const int64_t t1 = env_->MonotonicMicros();
    if (step_status.ok()) {
      const double per_row = Seconds(t0, t1) / static_cast<double>(std::max<int64_t>(decode_rows + prompt_rows, 1));
      for (size_t i = 0; i < slices.size(); ++i) {
        if (!status[i].ok() || !prompt_slice[i]) continue;
        owner[i]->result.prefill_compute_s += per_row * static_cast<double>(slices[i].tokens.size());
      }
    }
    MutexLock lock(&mu_);
    ++st_.steps;
    st_.step_rows += static_cast<uint64_t>(decode_rows + prompt_rows);
    st_.decode_rows += static_cast<uint64_t>(decode_rows);
    st_.draft_rows += static_cast<uint64_t>(draft_rows);
    st_.draft_accepted += static_cast<uint64_t>(accepted_rows);
    st_.prompt_rows += static_cast<uint64_t>(prompt_rows);
    st_.occupancy_sum += slices.size();
    st_.step_seconds += Seconds(t0, t1);
    st_.last_step_ms = static_cast<double>(t1 - t0) / 1e3;
  }
}

}  // namespace ember
