#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ember {
namespace {

SamplerParams Plain() {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0;
  p.repeat_last_n = 0;
  return p;
}

TEST(SamplerTest, GreedyPicksArgmaxLowestIdOnTies) {
  SamplerParams p = Plain();
  p.temperature = 0;
  Sampler s(p, 5);
  const float logits[] = {0.1f, 3.0f, -1.0f, 3.0f, 2.9f};
  EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, SameSeedSameTokens) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = std::sin(i * 0.7f) * 2;
  auto run = [&](uint64_t seed) {
    SamplerParams p = Plain();
    p.seed = seed;
    Sampler s(p, 50);
    std::vector<int32_t> out;
    for (int i = 0; i < 40; ++i) out.push_back(s.Sample(logits.data()));
    return out;
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

TEST(SamplerTest, TopKOneIsGreedy) {
  SamplerParams p = Plain();
  p.top_k = 1;
  Sampler s(p, 4);
  const float logits[] = {1.0f, 0.5f, 1.5f, 1.4f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.Sample(logits), 2);
}

TEST(SamplerTest, TopPAndMinPKeepOnlyTheHead) {
  // p ≈ {0.87, 0.12, 0.0016, ...}: top_p 0.5 and min_p 0.5 both keep only token 0.
  const float logits[] = {4.0f, 2.0f, -2.4f, -3.0f};
  SamplerParams p = Plain();
  p.top_p = 0.5f;
  Sampler a(p, 4);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(a.Sample(logits), 0);
  p = Plain();
  p.min_p = 0.5f;
  Sampler b(p, 4);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(b.Sample(logits), 0);
  // With min_p 0.1, token 1 (p ratio 0.135) stays eligible and shows up.
  p.min_p = 0.1f;
  Sampler c(p, 4);
  int ones = 0;
  for (int i = 0; i < 200; ++i) ones += c.Sample(logits) == 1;
  EXPECT_GT(ones, 5);
}

TEST(SamplerTest, LogitBiasBansAToken) {
  SamplerParams p = Plain();
  p.temperature = 0;
  p.logit_bias[2] = -INFINITY;
  Sampler s(p, 3);
  const float logits[] = {0.0f, 1.0f, 5.0f};
  EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, PenaltiesOverTheWindow) {
  const float logits[] = {2.0f, 1.9f, 0.0f};
  SamplerParams p = Plain();
  p.temperature = 0;
  p.repeat_penalty = 1.5f;  // 2.0 / 1.5 < 1.9
  p.repeat_last_n = 2;
  Sampler s(p, 3);
  EXPECT_EQ(s.Sample(logits), 0);
  s.Accept(0);
  EXPECT_EQ(s.Sample(logits), 1);
  s.Accept(2);
  s.Accept(2);  // token 0 slid out of the 2-token window
  EXPECT_EQ(s.Sample(logits), 0);

  SamplerParams q = Plain();
  q.temperature = 0;
  q.frequency_penalty = 0.06f;  // 2 occurrences: 2.0 - 0.12 < 1.9
  q.repeat_last_n = -1;
  Sampler f(q, 3);
  f.Accept(0);
  EXPECT_EQ(f.Sample(logits), 0);
  f.Accept(0);
  EXPECT_EQ(f.Sample(logits), 1);

  SamplerParams r = Plain();
  r.temperature = 0;
  r.presence_penalty = 0.2f;
  r.repeat_last_n = -1;
  Sampler pr(r, 3);
  pr.Accept(0);
  pr.Accept(0);  // presence counts once: 2.0 - 0.2 < 1.9
  EXPECT_EQ(pr.Sample(logits), 1);
}

// Reference log-softmax in double.
std::vector<double> LogSoftmax(const std::vector<float>& l) {
  double mx = -INFINITY;
  for (float v : l) mx = std::max<double>(mx, v);
  double sum = 0;
  for (float v : l) sum += std::exp(v - mx);
  std::vector<double> out;
  for (float v : l) out.push_back(v - mx - std::log(sum));
  return out;
}

TEST(SamplerTest, LogprobsAreLogSoftmaxAfterBiasBeforeTemperature) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, -3.0f, 0.0f, 1.5f};
  SamplerParams p = Plain();
  p.logit_bias[4] = 0.75f;  // 1.0 -> 1.75
  p.logit_bias[5] = -INFINITY;
  std::vector<float> biased = logits;
  biased[4] += 0.75f;
  biased[5] = -INFINITY;
  const std::vector<double> ref = LogSoftmax(biased);
  for (float temp : {0.0f, 0.3f, 2.5f}) {
    p.temperature = temp;
    Sampler s(p, 8);
    TokenLogprobs lp;
    for (int rep = 0; rep < 20; ++rep) {
      const int32_t tok = s.Sample(logits.data(), 8, &lp);
      EXPECT_EQ(lp.token, tok);
      EXPECT_NEAR(lp.logprob, ref[tok], 1e-6) << "temp " << temp;
      ASSERT_EQ(lp.top.size(), 8u);
      // Descending, ties (ids 1 and 3) lower id first, the banned token last at -inf.
      const std::vector<int32_t> order = {1, 3, 4, 7, 0, 6, 2, 5};
      double total = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        EXPECT_EQ(lp.top[i].token, order[i]) << i;
        if (order[i] == 5) {
          EXPECT_EQ(lp.top[i].logprob, -INFINITY);
        } else {
          EXPECT_NEAR(lp.top[i].logprob, ref[order[i]], 1e-6);
        }
        total += std::exp(static_cast<double>(lp.top[i].logprob));
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
      EXPECT_NE(tok, 5);
    }
  }
}

TEST(SamplerTest, TopLogprobsCountAndSameTokensAsPlainSample) {
  std::vector<float> logits(300);
  for (int i = 0; i < 300; ++i) logits[i] = std::sin(i * 1.3f) * 3;
  SamplerParams p;  // defaults: top-k, top-p, min-p, temperature
  p.seed = 7;
  Sampler a(p, 300), b(p, 300);
  TokenLogprobs lp;
  for (int n_top : {0, 1, 5, 20, 50}) {
    const int32_t ta = a.Sample(logits.data());
    const int32_t tb = b.Sample(logits.data(), n_top, &lp);
    EXPECT_EQ(ta, tb);
    EXPECT_EQ(lp.top.size(), static_cast<size_t>(std::min(n_top, kMaxTopLogprobs)));
    for (size_t i = 1; i < lp.top.size(); ++i) EXPECT_GE(lp.top[i - 1].logprob, lp.top[i].logprob);
    if (!lp.top.empty()) {
      const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      EXPECT_EQ(lp.top[0].token, best);
      EXPECT_LE(lp.logprob, lp.top[0].logprob);
    }
  }
}

// top-p sorts only the head it needs; whatever it keeps must be exactly the full-sort prefix.
TEST(SamplerTest, TopPPartialSortKeepsTheFullSortPrefix) {
  const int n = 20000;
  for (float spread : {400.0f, 0.01f}) {  // a peaked head (small cut) and a flat one (the cut grows past 64)
    std::vector<float> logits(n);
    uint32_t x = 12345;
    for (int i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      logits[i] = spread * static_cast<float>(x >> 8) / static_cast<float>(1 << 24);
    }
    const float top_p = 0.5f;
    // Reference: full sort, cumulative probability in sorted order.
    std::vector<int32_t> ids(n);
    for (int i = 0; i < n; ++i) ids[i] = i;
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    const std::vector<double> lsm = LogSoftmax(logits);
    double cum = 0;
    size_t keep = 0;
    while (keep < ids.size() && cum < top_p) cum += std::exp(lsm[ids[keep++]]);
    std::vector<char> allowed(n, 0);
    for (size_t i = 0; i < keep; ++i) allowed[ids[i]] = 1;
    SamplerParams p = Plain();
    p.top_p = top_p;
    Sampler s(p, n);
    int distinct_outside_top = 0;
    for (int rep = 0; rep < 100; ++rep) {
      const int32_t t = s.Sample(logits.data());
      ASSERT_TRUE(allowed[t]) << "spread " << spread << ": token " << t << " is beyond the top-p cut of " << keep;
      distinct_outside_top += t != ids[0];
    }
    EXPECT_GT(distinct_outside_top, 0) << spread;
    if (spread < 1) {
      EXPECT_GT(keep, 1000u);
    }
    if (spread > 1) {
      EXPECT_LT(keep, 64u);  // exercised the growing head
    }
  }
}

TEST(SamplerTest, ValidateRejectsBadParams) {
  SamplerParams p;
  p.top_p = 0;
  EXPECT_FALSE(p.Validate().ok());
  p = SamplerParams();
  p.min_p = 2;
  EXPECT_FALSE(p.Validate().ok());
  p = SamplerParams();
  EXPECT_TRUE(p.Validate().ok());
}

}  // namespace
}  // namespace ember
