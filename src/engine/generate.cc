// Engine::Generate: prefill, then sample / stream / decode until end-of-generation, the length limit,
// cancellation or the callback says stop.
#include <string>

#include "engine/engine.h"
#include "util/stopwatch.h"

namespace ember {

StatusOr<GenerateResult> Engine::Generate(Sequence& seq, std::span<const int32_t> prompt,
                                          const GenerateOptions& options, const TokenCallback& on_token) {
  EMBER_RETURN_IF_ERROR(options.sampling.Validate());
  if (options.top_logprobs < -1 || options.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("generate: top_logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  const bool want_logprobs = options.top_logprobs >= 0;
  TokenLogprobs lp;
  GenerateResult r;
  const Stopwatch since_start(opts_.env);
  auto cancelled = [&] { return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed); };
  Sampler sampler(options.sampling, model_->config().n_vocab);
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
  while (static_cast<int64_t>(r.tokens.size()) < options.max_tokens) {
    if (cancelled()) {
      r.stop = StopReason::kCancelled;
      break;
    }
    const int32_t tok = want_logprobs ? sampler.Sample(logits, options.top_logprobs, &lp) : sampler.Sample(logits);
    if (options.constraint != nullptr) EMBER_RETURN_IF_ERROR(options.constraint->Accept(tok));
    sampler.Accept(tok);
    r.tokens.push_back(tok);
    if (want_logprobs) {
      if (options.on_logprobs) options.on_logprobs(lp);
      r.logprobs.push_back(lp);
    }
    if (r.tokens.size() == 1) r.ttft_s = since_start.ElapsedSeconds();
    const bool keep_going = on_token ? on_token(tok) : true;
    if (options.stop_at_eog && tokenizer_ && tokenizer_->IsEog(tok)) {
      r.stop = StopReason::kEog;
      break;
    }
    if (!keep_going) {
      r.stop = StopReason::kCallback;
      break;
    }
    if (options.constraint != nullptr && options.constraint->OnlyEndCanFollow()) {
      r.stop = StopReason::kEog;  // the grammar is complete and cannot grow: no forward pass for an EOG
      break;
    }
    if (static_cast<int64_t>(r.tokens.size()) == options.max_tokens) break;  // the last one is not forwarded
    EMBER_ASSIGN_OR_RETURN(logits, Decode(seq, tok));
    ++r.decode_tokens;
  }
  r.decode_s = since_decode.ElapsedSeconds();
  return r;
}

}  // namespace ember
