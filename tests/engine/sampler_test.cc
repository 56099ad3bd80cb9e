#include "engine/sampler.h"

#include <gtest/gtest.h>

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
