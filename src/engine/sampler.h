// Token sampling as a small chain of stages over a candidate list (after llama.cpp's sampler chain):
//
//   logit bias -> penalties (repeat / presence / frequency over the last repeat_last_n tokens)
//   -> the constraint's mask (a grammar; bans tokens, never raises one) -> greedy (temperature <= 0) | top-k -> top-p -> min-p -> temperature -> draw with the seeded RNG
//
// Same seed, same logits, same history -> same token. Buffers are allocated once (n_vocab each).
//
// Cost: nothing sorts the whole vocabulary. top-k is a partial selection; top-p sorts only the head
// it needs (growing the sorted prefix until the cumulative probability reaches p); min-p filters by
// logit (keep logit >= max + ln(min_p)) without sorting; the draw walks the candidates in their
// current order. Softmaxes use the vectorised kernels::ExpArray.
//
// Log-probabilities (for the server's OpenAI `logprobs` / `top_logprobs`): Sample(logits, n_top, &lp)
// also reports the log-softmax, over the whole vocabulary, of the logits AFTER logit bias, penalties
// and the constraint's mask, and BEFORE top-k/top-p/min-p truncation and temperature (OpenAI's
// convention: logprobs do not depend on temperature or truncation; a banned token reports -inf). Under a
// grammar the distribution is thus renormalised over the tokens the grammar allows: a logprob says how
// likely the model found the token among those it was permitted to write. It is the same in greedy
// mode. The sampled token's logprob plus the n_top most likely tokens (descending; lower id first on
// ties) are returned.
//
// Thread-safety: a Sampler belongs to one sequence; use it from one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "grammar/token_constraint.h"
#include "util/status.h"

namespace ember {

struct SamplerParams {
  float temperature = 0.8f;     // <= 0: greedy (argmax; lowest id on ties)
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off. logit > 0 ? logit / p : logit * p
  float presence_penalty = 0;   // subtracted once if the token occurred in the window
  float frequency_penalty = 0;  // subtracted per occurrence in the window
  int32_t repeat_last_n = 64;   // penalty window; 0: off, -1: whole history
  std::map<int32_t, float> logit_bias;  // added to the token's logit (-inf bans it)
  uint64_t seed = 0;

  Status Validate() const;
};

struct Candidate {
  int32_t id;
  float logit;
  float p;  // probability after the last softmax stage
};

// Most alternatives Sample can report per token (OpenAI's top_logprobs limit).
inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;  // natural log; -inf for a banned token
};

// One sampled token's log-probabilities (see the header comment for the distribution used).
struct TokenLogprobs {
  int32_t token = -1;             // the sampled token
  float logprob = 0;              // its log-probability
  std::vector<TokenLogprob> top;  // the n_top most likely tokens, descending (ties: lower id first)
};

class Sampler {
 public:
  Sampler(const SamplerParams& params, int64_t n_vocab);

  // Picks the next token from a row of n_vocab logits.
  int32_t Sample(const float* logits);
  // The same token as Sample(logits) (same RNG use), plus its log-probabilities: *out gets the
  // sampled token's logprob and the n_top (clamped to [0, kMaxTopLogprobs]) most likely tokens.
  int32_t Sample(const float* logits, int n_top, TokenLogprobs* out);
  // Speculative decoding (docs/speculative.md): the token to emit where a deterministic drafter proposed
  // `draft` (its q is one-hot). Greedy: the argmax, as Sample (the draft is accepted iff it is the
  // argmax). Sampling: `draft` with probability p(draft), else a draw from p with `draft` removed and
  // renormalised — standard speculative rejection sampling, so the token is distributed exactly as
  // Sample's (the RNG is used differently). p is Sample's final distribution (bias, penalties, mask,
  // top-k/top-p/min-p, temperature). n_top/out as Sample's (n_top < 0: no logprobs).
  int32_t SampleDraft(const float* logits, int32_t draft, int n_top = -1, TokenLogprobs* out = nullptr);
  // Records a token of the sequence (prompt or generated) for the penalty window.
  void Accept(int32_t token);
  void Reset();
  // Masks every later Sample's logits with `c` (borrowed; null: none). The sampler only asks for the
  // mask: telling the constraint which token was chosen (TokenConstraint::Accept) is the caller's job.
  void set_constraint(grammar::TokenConstraint* c) { constraint_ = c; }

  const SamplerParams& params() const { return params_; }

 private:
  void ApplyBiasAndPenalties();  // on work_
  int32_t Choose();              // the chain after bias/penalties, on work_
  int32_t Argmax() const;        // of work_, lowest id on ties
  void Truncate();               // cand_ from work_: top-k -> top-p -> min-p -> temperature
  // The top list from work_ (before the token is known); returns log Σ exp(work_).
  double FillLogprobs(int n_top, TokenLogprobs* out);
  void TopK(int32_t k);
  void TopP(float p);
  void MinP(float p);
  void ComputeProbs();  // p of every candidate (softmax over cand_ in its current order)
  int32_t Draw();

  SamplerParams params_;
  int64_t n_vocab_;
  std::vector<float> work_;      // n_vocab: logits after bias and penalties
  std::vector<float> tmp_;       // n_vocab: exp scratch
  std::vector<Candidate> cand_;  // n_vocab capacity; size() = live candidates
  bool sorted_ = false;          // cand_ is wholly sorted descending by (logit, -id)
  std::deque<int32_t> history_;  // last repeat_last_n accepted tokens
  std::vector<int32_t> window_;  // scratch: sorted copy of history_
  std::mt19937_64 rng_;
  grammar::TokenConstraint* constraint_ = nullptr;
};

}  // namespace ember
