#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace ember {

Status SamplerParams::Validate() const {
  if (!(top_p > 0)) return InvalidArgument("sampling: top_p must be > 0");
  if (min_p < 0 || min_p > 1) return InvalidArgument("sampling: min_p must be in [0, 1]");
  if (!(repeat_penalty > 0)) return InvalidArgument("sampling: repeat_penalty must be > 0");
  if (repeat_last_n < -1) return InvalidArgument("sampling: repeat_last_n must be >= -1");
  if (std::isnan(temperature)) return InvalidArgument("sampling: temperature is NaN");
  return Status::Ok();
}

Sampler::Sampler(const SamplerParams& params, int64_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
  cand_.reserve(static_cast<size_t>(n_vocab));
}

void Sampler::Reset() {
  history_.clear();
  rng_.seed(params_.seed);
}

void Sampler::Accept(int32_t token) {
  if (params_.repeat_last_n == 0) return;
  history_.push_back(token);
  if (params_.repeat_last_n > 0 && history_.size() > static_cast<size_t>(params_.repeat_last_n)) {
    history_.pop_front();
  }
}

void Sampler::ApplyBiasAndPenalties() {
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < n_vocab_) cand_[static_cast<size_t>(id)].logit += bias;
  }
  const bool penalize = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0 ||
                        params_.frequency_penalty != 0;
  if (!penalize || history_.empty()) return;
  // Count each distinct token once: sort a copy of the (small) window.
  std::vector<int32_t>& window = window_;
  window.assign(history_.begin(), history_.end());
  std::sort(window.begin(), window.end());
  for (size_t i = 0; i < window.size();) {
    size_t j = i;
    while (j < window.size() && window[j] == window[i]) ++j;
    const int32_t id = window[i];
    const float count = static_cast<float>(j - i);
    i = j;
    if (id < 0 || id >= n_vocab_) continue;
    float& l = cand_[static_cast<size_t>(id)].logit;
    l = l <= 0 ? l * params_.repeat_penalty : l / params_.repeat_penalty;
    l -= count * params_.frequency_penalty + params_.presence_penalty;
  }
}

void Sampler::SoftmaxCandidates() {
  if (!sorted_) {
    std::sort(cand_.begin(), cand_.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    sorted_ = true;
  }
  const float max = cand_.front().logit;
  double sum = 0;
  for (Candidate& c : cand_) {
    c.p = std::exp(c.logit - max);
    sum += c.p;
  }
  for (Candidate& c : cand_) c.p = static_cast<float>(c.p / sum);
}

void Sampler::TopK(int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= cand_.size()) return;
  auto cmp = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), cmp);
  cand_.resize(static_cast<size_t>(k));
  sorted_ = true;
}

void Sampler::TopP(float p) {
  if (p >= 1.0f) return;
  SoftmaxCandidates();
  double cum = 0;
  size_t keep = cand_.size();
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += cand_[i].p;
    if (cum >= p) {
      keep = i + 1;
      break;
    }
  }
  cand_.resize(keep);
}

void Sampler::MinP(float p) {
  if (p <= 0.0f) return;
  SoftmaxCandidates();
  const float threshold = cand_.front().p * p;
  size_t keep = 1;
  while (keep < cand_.size() && cand_[keep].p >= threshold) ++keep;
  cand_.resize(keep);
}

int32_t Sampler::Draw() {
  SoftmaxCandidates();
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double r = uni(rng_);
  double cum = 0;
  for (const Candidate& c : cand_) {
    cum += c.p;
    if (r < cum) return c.id;
  }
  return cand_.back().id;  // rounding left r just above the total
}

int32_t Sampler::Sample(const float* logits) {
  cand_.resize(static_cast<size_t>(n_vocab_));
  for (int64_t i = 0; i < n_vocab_; ++i) cand_[static_cast<size_t>(i)] = {static_cast<int32_t>(i), logits[i], 0};
  sorted_ = false;
  ApplyBiasAndPenalties();
  if (params_.temperature <= 0) {
    const auto best = std::min_element(cand_.begin(), cand_.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    return best->id;
  }
  TopK(params_.top_k);
  TopP(params_.top_p);
  MinP(params_.min_p);
  for (Candidate& c : cand_) c.logit /= params_.temperature;
  return Draw();
}

}  // namespace ember
