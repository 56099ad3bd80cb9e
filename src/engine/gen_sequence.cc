#include "engine/gen_sequence.h"

#include <algorithm>
#include <exception>

namespace ember {

Status ValidateJob(const BatchJob& job) {
  if (job.seq == nullptr) return InvalidArgument("generate: no sequence");
  const int64_t L = static_cast<int64_t>(job.prompt.size());
  if (L == 0) return InvalidArgument("generate: empty prompt");
  if (job.seq->n_pos() >= L) return InvalidArgument("generate: the sequence already holds the whole prompt (nothing to forward)");
  if (!std::equal(job.seq->tokens().begin(), job.seq->tokens().end(), job.prompt.begin())) {
    return InvalidArgument("generate: the sequence's tokens are not a prefix of the prompt");
  }
  if (!std::is_sorted(job.checkpoints.begin(), job.checkpoints.end()) ||
      (!job.checkpoints.empty() && (job.checkpoints.front() < 1 || job.checkpoints.back() >= L))) {
    return InvalidArgument("generate: checkpoints must be ascending prompt positions in [1, prompt length)");
  }
  EMBER_RETURN_IF_ERROR(job.options.sampling.Validate());
  EMBER_RETURN_IF_ERROR(job.options.speculative.Validate());
  if (job.options.top_logprobs < -1 || job.options.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("generate: top_logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  return Status::Ok();
}

GenSequence::GenSequence(BatchJob job, Env* env) : job_(std::move(job)), env_(env) {
  start_us_ = env_->MonotonicMicros();
}

double GenSequence::Since(int64_t from_us) const {
  return static_cast<double>(env_->MonotonicMicros() - from_us) / 1e6;
}

void GenSequence::Guarded(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    Fail(Internal(std::string("generation failed: ") + e.what()));
  } catch (...) {
    Fail(Internal("generation failed: an exception that is not a std::exception"));
  }
}

void GenSequence::Begin(const Engine& engine, uint64_t order, bool drafting) {
  order_ = order;
  tokenizer_ = engine.tokenizer();
  result_.queued_s = Since(start_us_);
  Guarded([&] {
    sampler_ = std::make_unique<Sampler>(job_.options.sampling, engine.model().config().n_vocab);
    sampler_->set_constraint(job_.options.constraint);
    for (int32_t t : job_.prompt) sampler_->Accept(t);  // the penalty window sees the whole context
    if (!drafting || !job_.options.speculative.enabled()) return;
    // A hybrid's recurrent state cannot be cut back past a rejected draft (docs/hybrid.md): no drafts.
    if (engine.model().config().hybrid()) return;
    StatusOr<std::unique_ptr<Drafter>> d = MakeDrafter(job_.options.speculative);
    if (!d.ok()) return Fail(d.status());
    drafter_ = std::move(*d);
    pacer_ = std::make_unique<DraftPacer>(MaxDraftTokens(engine, job_.options.speculative.draft_max));
  });
}

bool GenSequence::cancel_requested() const {
  return job_.options.cancel != nullptr && job_.options.cancel->load(std::memory_order_relaxed);
}

void GenSequence::Finish(StopReason stop) {
  result_.gen.stop = stop;
  finished_ = true;
}

void GenSequence::Fail(Status st) {
  status_ = std::move(st);
  finished_ = true;
}

void GenSequence::Cancel() {
  Finish(StopReason::kCancelled);
  if (!decoding_) result_.gen.prefill_s = Since(start_us_);
}

void GenSequence::Release() {
  if (decoding_) result_.gen.decode_s = Since(prompt_done_us_);
}

bool GenSequence::MaskReady(uint64_t max_work) {
  grammar::TokenConstraint* c = job_.options.constraint;
  if (c == nullptr) return !finished_;
  bool ready = false;
  Guarded([&] {
    StatusOr<bool> r = c->Prepare(max_work);
    if (!r.ok()) return Fail(r.status());
    ready = *r;
  });
  return ready && !finished_;
}

// The one place a token is chosen and checked: the same checks in the same order for every caller, so
// tokens, stop reasons and RNG use never depend on how the sequence was batched.
void GenSequence::Sample(const float* logits, int32_t draft) {
  GenerateResult& r = result_.gen;
  const GenerateOptions& o = job_.options;
  if (static_cast<int64_t>(r.tokens.size()) >= o.max_tokens) return Finish(StopReason::kLength);
  if (cancel_requested()) return Finish(StopReason::kCancelled);
  const bool want_lp = o.top_logprobs >= 0;
  const int32_t t = draft >= 0 ? sampler_->SampleDraft(logits, draft, want_lp ? o.top_logprobs : -1, &lp_)
                    : want_lp  ? sampler_->Sample(logits, o.top_logprobs, &lp_)
                               : sampler_->Sample(logits);
  if (o.constraint != nullptr) {
    Status accepted = o.constraint->Accept(t);
    if (!accepted.ok()) return Fail(std::move(accepted));
  }
  sampler_->Accept(t);
  r.tokens.push_back(t);
  if (draft >= 0 && t == draft) ++r.draft_accepted;
  if (want_lp) {
    if (o.on_logprobs) o.on_logprobs(lp_);
    r.logprobs.push_back(lp_);
  }
  if (r.tokens.size() == 1) r.ttft_s = Since(start_us_);
  const bool keep_going = job_.on_token ? job_.on_token(t) : true;
  if (o.stop_at_eog && tokenizer_ != nullptr && tokenizer_->IsEog(t)) return Finish(StopReason::kEog);
  if (!keep_going) return Finish(StopReason::kCallback);
  // The grammar is complete and cannot grow: no forward pass for an end token.
  if (o.constraint != nullptr && o.constraint->OnlyEndCanFollow()) return Finish(StopReason::kEog);
  if (static_cast<int64_t>(r.tokens.size()) == o.max_tokens) return Finish(StopReason::kLength);  // never forwarded
  pending_ = t;
}

void GenSequence::BuildDecodeSlice(int draft_room, int64_t n_ctx) {
  base_ = job_.seq->n_pos();
  verify_.assign(1, pending_);
  if (!drafter_) return;
  const int64_t left = job_.options.max_tokens - static_cast<int64_t>(result_.gen.tokens.size());
  const int limit = static_cast<int>(std::min<int64_t>({pacer_->Next(), left - 1, n_ctx - base_ - 1, draft_room}));
  if (limit > 0) Guarded([&] { drafter_->Draft(job_.seq->tokens(), pending_, limit, &verify_); });
}

int64_t GenSequence::OnDecodeRows(const float* rows, int64_t n_vocab) {
  const int nd = static_cast<int>(verify_.size()) - 1;
  int row = 0;
  for (; row <= nd; ++row) {
    const int32_t draft = row < nd ? verify_[static_cast<size_t>(row) + 1] : -1;
    Guarded([&] { Sample(rows + static_cast<int64_t>(row) * n_vocab, draft); });
    if (finished_ || pending_ != draft) break;
    // A drafted row is verified only with its mask ready already: a mask is never computed here.
    if (!MaskReady(0)) break;
  }
  const int64_t accepted = std::min(row, nd);
  if (nd > 0) {
    pacer_->Record(nd, static_cast<int>(accepted));
    result_.gen.draft_tokens += nd;
    ++result_.gen.drafts;
    // Positions past the walk's end hold drafted tokens that were not emitted (or follow a stop).
    if (job_.seq->n_pos() > base_ + 1 + row) {
      Status st = job_.seq->TrimTo(base_ + 1 + row);
      if (!st.ok()) Fail(std::move(st));
    }
  }
  result_.gen.decode_tokens += 1 + accepted;
  return accepted;
}

void GenSequence::OnPromptRows(int64_t rows, double compute_s) {
  result_.gen.prompt_tokens += rows;
  result_.prefill_compute_s += compute_s;
  const int64_t at = job_.seq->n_pos();
  if (job_.on_checkpoint && std::binary_search(job_.checkpoints.begin(), job_.checkpoints.end(), at)) {
    Guarded([&] { job_.on_checkpoint(*job_.seq); });
  }
}

int64_t GenSequence::RowsToCheckpoint() const {
  const int64_t at = job_.seq->n_pos();
  auto it = std::upper_bound(job_.checkpoints.begin(), job_.checkpoints.end(), at);
  return it == job_.checkpoints.end() ? 0 : *it - at;
}

void GenSequence::OnPromptDone(const float* logits) {
  prompt_done_us_ = env_->MonotonicMicros();
  result_.gen.prefill_s = static_cast<double>(prompt_done_us_ - start_us_) / 1e6;
  decoding_ = true;
  Guarded([&] {
    if (job_.on_prompt_done) job_.on_prompt_done(*job_.seq);
    Sample(logits, -1);
  });
}

}  // namespace ember
