// Token sampling as a small chain of stages over a candidate list (after llama.cpp's sampler chain):
//
//   logit bias -> penalties (repeat / presence / frequency over the last repeat_last_n tokens)
//   -> greedy (temperature <= 0) | top-k -> top-p -> min-p -> temperature -> draw with the seeded RNG
//
// Same seed, same logits, same history -> same token. The candidate buffer is allocated once.
//
// Thread-safety: a Sampler belongs to one sequence; use it from one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

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

class Sampler {
 public:
  Sampler(const SamplerParams& params, int64_t n_vocab);

  // Picks the next token from a row of n_vocab logits.
  int32_t Sample(const float* logits);
  // Records a token of the sequence (prompt or generated) for the penalty window.
  void Accept(int32_t token);
  void Reset();

  const SamplerParams& params() const { return params_; }

 private:
  void ApplyBiasAndPenalties();
  void TopK(int32_t k);
  void TopP(float p);
  void MinP(float p);
  void SoftmaxCandidates();  // sorted descending by logit; fills p
  int32_t Draw();

  SamplerParams params_;
  int64_t n_vocab_;
  std::vector<Candidate> cand_;  // n_vocab capacity; size() = live candidates
  bool sorted_ = false;
  std::deque<int32_t> history_;  // last repeat_last_n accepted tokens
  std::vector<int32_t> window_;  // scratch: sorted copy of history_
  std::mt19937_64 rng_;
};

}  // namespace ember
