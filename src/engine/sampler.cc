#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/fast_exp.h"

namespace ember {
namespace {

// Descending logit, lower id first on ties: a strict total order, so any partial sort yields the
// same prefix as a full sort.
bool Before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

}  // namespace

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
  work_.resize(static_cast<size_t>(n_vocab));
  tmp_.resize(static_cast<size_t>(n_vocab));
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
    if (id >= 0 && id < n_vocab_) work_[static_cast<size_t>(id)] += bias;
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
    float& l = work_[static_cast<size_t>(id)];
    l = l <= 0 ? l * params_.repeat_penalty : l / params_.repeat_penalty;
    l -= count * params_.frequency_penalty + params_.presence_penalty;
  }
}

void Sampler::ComputeProbs() {
  const size_t n = cand_.size();
  float max = -std::numeric_limits<float>::infinity();
  if (sorted_) {
    max = cand_.front().logit;
  } else {
    for (const Candidate& c : cand_) max = std::max(max, c.logit);
  }
  for (size_t i = 0; i < n; ++i) tmp_[i] = cand_[i].logit - max;
  kernels::ExpArray(tmp_.data(), tmp_.data(), static_cast<int>(n));
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += tmp_[i];
  for (size_t i = 0; i < n; ++i) cand_[i].p = static_cast<float>(tmp_[i] / sum);
}

void Sampler::TopK(int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= cand_.size()) return;
  // Select the k best, then sort only those.
  std::nth_element(cand_.begin(), cand_.begin() + (k - 1), cand_.end(), Before);
  cand_.resize(static_cast<size_t>(k));
  std::sort(cand_.begin(), cand_.end(), Before);
  sorted_ = true;
}

void Sampler::TopP(float p) {
  if (p >= 1.0f || cand_.size() <= 1) return;
  ComputeProbs();
  // Sort only as much of the head as the cumulative sum needs: the first m of a partial sort are the
  // first m of the full sort, so the cut is the one a full sort would give.
  const size_t n = cand_.size();
  size_t done = 0;  // cand_[0, done) is the sorted head
  size_t m = sorted_ ? n : std::min<size_t>(n, 64);
  double cum = 0;
  for (;;) {
    if (!sorted_) {
      const auto first = cand_.begin() + static_cast<ptrdiff_t>(done), mid = cand_.begin() + static_cast<ptrdiff_t>(m);
      if (m < n) std::nth_element(first, mid - 1, cand_.end(), Before);  // [done, m) = the next best
      std::sort(first, mid, Before);
      if (m == n) sorted_ = true;
    }
    for (size_t i = done; i < m; ++i) {
      cum += cand_[i].p;
      if (cum >= p) {
        cand_.resize(i + 1);
        sorted_ = true;
        return;
      }
    }
    if (m == n) return;  // rounding kept the total just below p: keep everything
    done = m;
    m = std::min(n, m * 8);
  }
}

void Sampler::MinP(float p) {
  if (p <= 0.0f || cand_.size() <= 1) return;
  // p_i >= min_p * p_max  <=>  logit_i >= max_logit + ln(min_p); no softmax or sort needed, and the
  // filter keeps the candidates' order.
  float max = -std::numeric_limits<float>::infinity();
  if (sorted_) {
    max = cand_.front().logit;
  } else {
    for (const Candidate& c : cand_) max = std::max(max, c.logit);
  }
  const float min_logit = max + std::log(p);
  const auto end = std::remove_if(cand_.begin(), cand_.end(), [&](const Candidate& c) { return c.logit < min_logit; });
  cand_.erase(end, cand_.end());
}

int32_t Sampler::Draw() {
  ComputeProbs();
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double r = uni(rng_);
  double cum = 0;
  for (const Candidate& c : cand_) {
    cum += c.p;
    if (r < cum) return c.id;
  }
  return cand_.back().id;  // rounding left r just above the total
}

int32_t Sampler::Argmax() const {
  // Lowest id on ties (the first strictly greater wins).
  size_t best = 0;
  for (size_t i = 1; i < work_.size(); ++i) {
    if (work_[i] > work_[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

void Sampler::Truncate() {
  cand_.resize(static_cast<size_t>(n_vocab_));
  for (int64_t i = 0; i < n_vocab_; ++i) {
    cand_[static_cast<size_t>(i)] = {static_cast<int32_t>(i), work_[static_cast<size_t>(i)], 0};
  }
  sorted_ = false;
  TopK(params_.top_k);
  TopP(params_.top_p);
  MinP(params_.min_p);
  for (Candidate& c : cand_) c.logit /= params_.temperature;
}

int32_t Sampler::Choose() {
  if (params_.temperature <= 0) return Argmax();
  Truncate();
  return Draw();
}

int32_t Sampler::SampleDraft(const float* logits, int32_t draft, int n_top, TokenLogprobs* out) {
  std::memcpy(work_.data(), logits, work_.size() * sizeof(float));
  ApplyBiasAndPenalties();
  if (constraint_ != nullptr) constraint_->Mask(work_);
  const bool want_lp = n_top >= 0 && out != nullptr;
  const double log_z = want_lp ? FillLogprobs(n_top, out) : 0;
  int32_t tok;
  if (params_.temperature <= 0) {
    tok = Argmax();
  } else {
    Truncate();
    ComputeProbs();
    auto it = std::find_if(cand_.begin(), cand_.end(), [&](const Candidate& c) { return c.id == draft; });
    const double p_draft = it == cand_.end() ? 0.0 : it->p;
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    if (uni(rng_) < p_draft) {
      tok = draft;  // accepted: min(1, p/q) with q(draft) = 1
    } else {
      // Rejected: draw from max(0, p - q) normalised, i.e. p without the draft (Draw renormalises).
      if (it != cand_.end()) cand_.erase(it);
      tok = cand_.empty() ? draft : Draw();
    }
  }
  if (want_lp) {
    out->token = tok;
    out->logprob = static_cast<float>(static_cast<double>(work_[static_cast<size_t>(tok)]) - log_z);
  }
  return tok;
}

double Sampler::FillLogprobs(int n_top, TokenLogprobs* out) {
  n_top = std::clamp(n_top, 0, kMaxTopLogprobs);
  const size_t n = work_.size();
  float max = -std::numeric_limits<float>::infinity();
  for (float l : work_) max = std::max(max, l);
  for (size_t i = 0; i < n; ++i) tmp_[i] = work_[i] - max;
  kernels::ExpArray(tmp_.data(), tmp_.data(), static_cast<int>(n));
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += tmp_[i];
  const double log_z = static_cast<double>(max) + std::log(sum);
  // The n_top best by one pass with a small sorted list (ids ascend, so an equal logit never displaces).
  std::vector<TokenLogprob>& top = out->top;
  top.clear();
  if (n_top > 0) {
    top.reserve(static_cast<size_t>(n_top));
    for (size_t i = 0; i < n; ++i) {
      const float l = work_[i];
      if (static_cast<int>(top.size()) == n_top && !(l > top.back().logprob)) continue;
      if (static_cast<int>(top.size()) == n_top) top.pop_back();
      auto pos = std::upper_bound(top.begin(), top.end(), l,
                                  [](float v, const TokenLogprob& t) { return v > t.logprob; });
      top.insert(pos, TokenLogprob{static_cast<int32_t>(i), l});  // logprob holds the logit for now
    }
    for (TokenLogprob& t : top) t.logprob = static_cast<float>(static_cast<double>(t.logprob) - log_z);
  }
  return log_z;
}

int32_t Sampler::Sample(const float* logits) {
  std::memcpy(work_.data(), logits, work_.size() * sizeof(float));
  ApplyBiasAndPenalties();
  if (constraint_ != nullptr) constraint_->Mask(work_);
  return Choose();
}

int32_t Sampler::Sample(const float* logits, int n_top, TokenLogprobs* out) {
  std::memcpy(work_.data(), logits, work_.size() * sizeof(float));
  ApplyBiasAndPenalties();
  if (constraint_ != nullptr) constraint_->Mask(work_);
  const double log_z = FillLogprobs(n_top, out);  // Choose reads work_ and leaves it as is
  const int32_t tok = Choose();
  out->token = tok;
  out->logprob = static_cast<float>(static_cast<double>(work_[static_cast<size_t>(tok)]) - log_z);
  return tok;
}

}  // namespace ember
