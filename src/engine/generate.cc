// Engine::Generate: prefill, then sample / stream / decode until end-of-generation, the length limit,
// cancellation or the callback says stop. With speculative decoding each forward pass carries the
// pending token and up to draft_max drafted ones (one multi-token slice, every row's logits); the rows
// are sampled in order as plain decode would sample them, the first rejected draft ends the row walk,
// and the KV of the positions past it is cut off again, so the sequence holds exactly what plain decode
// would hold.
#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/drafter.h"
#include "engine/engine.h"
#include "util/stopwatch.h"

namespace ember {

StatusOr<GenerateResult> Engine::Generate(Sequence& seq, std::span<const int32_t> prompt,
                                          const GenerateOptions& options, const TokenCallback& on_token) {
  EMBER_RETURN_IF_ERROR(options.sampling.Validate());
  if (options.top_logprobs < -1 || options.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("generate: top_logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  std::unique_ptr<Drafter> drafter;
  std::unique_ptr<StepContext> verify_ctx;
  const int draft_max = options.speculative.enabled() ? MaxDraftTokens(*this, options.speculative.draft_max) : 0;
  if (options.speculative.enabled()) {
    EMBER_ASSIGN_OR_RETURN(drafter, MakeDrafter(options.speculative));
    verify_ctx = NewStepContext(draft_max + 1, 1, draft_max + 1);
  }
  DraftPacer pacer(draft_max);
  const bool want_logprobs = options.top_logprobs >= 0;
  const int64_t n_vocab = model_->config().n_vocab;
  TokenLogprobs lp;
  GenerateResult r;
  const Stopwatch since_start(opts_.env);
  auto cancelled = [&] { return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed); };
  Sampler sampler(options.sampling, n_vocab);
  sampler.set_constraint(options.constraint);
  for (int32_t t : seq.tokens()) sampler.Accept(t);  // the penalty window sees the whole context
  for (int32_t t : prompt) sampler.Accept(t);
  const int64_t n_before = seq.n_pos();
  EMBER_ASSIGN_OR_RETURN(const float* logits, Prefill(seq, prompt, options.ubatch, options.cancel));
  r.prompt_tokens = seq.n_pos() - n_before;  // all of the prompt, unless cancelled part way
  r.prefill_s = since_start.ElapsedSeconds();
  if (logits == nullptr) {
    r.stop = StopReason::kCancelled;  // during prefill: no token, the sequence holds what was done
    return r;
  }
  const Stopwatch since_decode(opts_.env);
  // rows: logits of the positions forwarded last; row i verifies drafts[i] (i < drafts.size()); the
  // row after the last draft is sampled freely. base: the sequence's positions before that forward.
  std::vector<int32_t> drafts, verify;
  int64_t base = seq.n_pos() - 1;
  bool done = false;
  while (!done) {
    const int nd = static_cast<int>(drafts.size());
    int row = 0;  // the row the walk ended on: the sequence keeps base + 1 + row positions
    int32_t tok = -1;
    for (; row <= nd; ++row) {
      if (static_cast<int64_t>(r.tokens.size()) >= options.max_tokens) {
        done = true;  // r.stop stays kLength
        break;
      }
      if (cancelled()) {
        r.stop = StopReason::kCancelled;
        done = true;
        break;
      }
      if (row == 0 && options.constraint != nullptr) {  // the whole mask; a spent budget ends the generation
        EMBER_ASSIGN_OR_RETURN(const bool ready, options.constraint->Prepare(UINT64_MAX));
        (void)ready;
      }
      const float* l = logits + static_cast<int64_t>(row) * n_vocab;
      const int32_t draft = row < nd ? drafts[static_cast<size_t>(row)] : -1;
      if (draft >= 0) {
        tok = sampler.SampleDraft(l, draft, want_logprobs ? options.top_logprobs : -1, &lp);
      } else {
        tok = want_logprobs ? sampler.Sample(l, options.top_logprobs, &lp) : sampler.Sample(l);
      }
      if (options.constraint != nullptr) EMBER_RETURN_IF_ERROR(options.constraint->Accept(tok));
      sampler.Accept(tok);
      r.tokens.push_back(tok);
      if (draft >= 0 && tok == draft) ++r.draft_accepted;
      if (want_logprobs) {
        if (options.on_logprobs) options.on_logprobs(lp);
        r.logprobs.push_back(lp);
      }
      if (r.tokens.size() == 1) r.ttft_s = since_start.ElapsedSeconds();
      const bool keep_going = on_token ? on_token(tok) : true;
      if (options.stop_at_eog && tokenizer_ && tokenizer_->IsEog(tok)) {
        r.stop = StopReason::kEog;
        done = true;
      } else if (!keep_going) {
        r.stop = StopReason::kCallback;
        done = true;
      } else if (options.constraint != nullptr && options.constraint->OnlyEndCanFollow()) {
        r.stop = StopReason::kEog;  // the grammar is complete and cannot grow: no forward pass for an EOG
        done = true;
      } else if (static_cast<int64_t>(r.tokens.size()) == options.max_tokens) {
        done = true;  // the last one is not forwarded
      }
      if (done || tok != draft) break;  // a stop, a rejected draft, or the free row: tok is pending
      // The next row verifies a draft only if its mask is ready already, as in the batch runner (which
      // never computes a mask inside a step): otherwise the walk ends here and tok is pending.
      if (options.constraint != nullptr) {
        EMBER_ASSIGN_OR_RETURN(const bool ready, options.constraint->Prepare(0));
        if (!ready) break;
      }
    }
    if (nd > 0) {
      pacer.Record(nd, std::min(row, nd));
      // Positions past the walk's end hold drafted tokens that were not emitted (or follow a stop).
      if (seq.n_pos() > base + 1 + row) EMBER_RETURN_IF_ERROR(seq.TrimTo(base + 1 + row));
    }
    r.decode_tokens += std::min<int64_t>(row, nd);  // drafted positions kept (the pending one is counted below)
    if (done) break;
    // Forward tok, with drafts when the drafter has any and they fit the length and the context.
    drafts.clear();
    base = seq.n_pos();
    const int64_t left = options.max_tokens - static_cast<int64_t>(r.tokens.size());  // tokens still to emit
    const int64_t room = opts_.n_ctx - base - 1;
    const int limit = drafter ? static_cast<int>(std::min<int64_t>({pacer.Next(), left - 1, room})) : 0;
    if (limit > 0) drafter->Draft(seq.tokens(), tok, limit, &drafts);
    if (drafts.empty()) {
      EMBER_ASSIGN_OR_RETURN(logits, Decode(seq, tok));
    } else {
      verify.assign(1, tok);
      verify.insert(verify.end(), drafts.begin(), drafts.end());
      const StepSlice slice{&seq, verify, true, true};
      std::vector<Status> st;
      EMBER_RETURN_IF_ERROR(Step(*verify_ctx, std::span<const StepSlice>(&slice, 1), &st));
      EMBER_RETURN_IF_ERROR(st[0]);
      logits = verify_ctx->logits(0);
      r.draft_tokens += static_cast<int64_t>(drafts.size());
      ++r.drafts;
    }
    ++r.decode_tokens;
  }
  r.decode_s = since_decode.ElapsedSeconds();
  return r;
}

}  // namespace ember
