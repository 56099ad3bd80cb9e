// StepCostModel (issue #30): the attention-work feature, readiness, fitting a linear law of rows and
// attention work, following a change of law, robustness to degenerate data, and PromptRowsWithin's
// bounds. Pure arithmetic: no model, no clock.
#include "engine/step_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ember {
namespace {

// ms = c0 + c_rows × rows + c_attn × attn: the law the fits below must recover.
struct Law {
  double c0, c_rows, c_attn;
  double operator()(const StepShape& s) const { return c0 + c_rows * static_cast<double>(s.rows) + c_attn * s.attn; }
};

constexpr Law kLawA{2.0, 0.5, 1e-5};
constexpr Law kLawB{5.0, 0.2, 4e-5};

// Steps of varied shape: a few decode rows over long contexts plus prompt chunks of varied size, so
// rows and attention work are not collinear.
std::vector<StepShape> VariedShapes(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<StepShape> out;
  for (int i = 0; i < n; ++i) {
    StepShape s;
    const int64_t decoders = std::uniform_int_distribution<int64_t>(0, 8)(rng);
    const int64_t chunk = std::uniform_int_distribution<int64_t>(decoders == 0 ? 1 : 0, 300)(rng);
    for (int64_t d = 0; d < decoders; ++d) {
      s.rows += 1;
      s.attn += AttentionWork(std::uniform_int_distribution<int64_t>(0, 4000)(rng), 1);
    }
    s.rows += chunk;
    s.attn += AttentionWork(std::uniform_int_distribution<int64_t>(0, 4000)(rng), chunk);
    out.push_back(s);
  }
  return out;
}

void Train(StepCostModel* m, const Law& law, int n, uint32_t seed) {
  for (const StepShape& s : VariedShapes(n, seed)) m->Record(s, law(s));
}

void ExpectPredictsLaw(const StepCostModel& m, const Law& law, double tolerance, uint32_t seed) {
  ASSERT_TRUE(m.ready());
  for (const StepShape& s : VariedShapes(50, seed)) {
    const double want = law(s);
    EXPECT_NEAR(m.PredictMs(s), want, tolerance * want) << "rows " << s.rows << " attn " << s.attn;
  }
}

TEST(AttentionWork, HandComputedCases) {
  // Each new row attends to the held positions, the rows before it and itself.
  EXPECT_DOUBLE_EQ(AttentionWork(0, 1), 1);
  EXPECT_DOUBLE_EQ(AttentionWork(10, 1), 11);
  EXPECT_DOUBLE_EQ(AttentionWork(0, 3), 1 + 2 + 3);
  EXPECT_DOUBLE_EQ(AttentionWork(5, 3), 6 + 7 + 8);
  EXPECT_DOUBLE_EQ(AttentionWork(100, 0), 0);
  EXPECT_DOUBLE_EQ(AttentionWork(1000, 256), 256 * 1000 + 256.0 * 257 / 2);
}

TEST(AttentionWork, SplittingAChunkKeepsTheTotal) {
  // Forwarding a rows in one chunk or as a then b (after a more positions) is the same work.
  for (int64_t held : {0, 7, 3000})
    for (int64_t a : {1, 5, 64})
      for (int64_t b : {1, 9, 200})
        EXPECT_DOUBLE_EQ(AttentionWork(held, a + b), AttentionWork(held, a) + AttentionWork(held + a, b));
}

TEST(StepCostModel, NotReadyBeforeMinSamples) {
  StepCostModel m;
  const std::vector<StepShape> shapes = VariedShapes(StepCostModel::kMinSamples, 1);
  for (int i = 0; i + 1 < StepCostModel::kMinSamples; ++i) {
    m.Record(shapes[static_cast<size_t>(i)], kLawA(shapes[static_cast<size_t>(i)]));
    EXPECT_FALSE(m.ready()) << "after " << i + 1 << " samples";
    EXPECT_EQ(m.PredictMs(shapes[0]), 0);  // "0 when not ready"
  }
  m.Record(shapes.back(), kLawA(shapes.back()));
  EXPECT_TRUE(m.ready());
  EXPECT_GT(m.PredictMs(shapes[0]), 0);
}

TEST(StepCostModel, RecoversALinearLaw) {
  StepCostModel m;
  Train(&m, kLawA, 20, 2);
  ExpectPredictsLaw(m, kLawA, 0.05, 3);
  // Shapes outside the training range too (the law is linear, so the fit extrapolates).
  const StepShape big{2000, AttentionWork(30000, 2000)};
  EXPECT_NEAR(m.PredictMs(big), kLawA(big), 0.05 * kLawA(big));
}

TEST(StepCostModel, RecoversALawWithSomeNoise) {
  // ±2 % multiplicative noise: the fit over the window still predicts within 5 %.
  StepCostModel m;
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> noise(0.98, 1.02);
  for (const StepShape& s : VariedShapes(StepCostModel::kWindow, 5)) m.Record(s, kLawA(s) * noise(rng));
  ExpectPredictsLaw(m, kLawA, 0.05, 6);
}

TEST(StepCostModel, FollowsAChangeOfLaw) {
  StepCostModel m;
  Train(&m, kLawA, StepCostModel::kWindow, 7);
  ExpectPredictsLaw(m, kLawA, 0.05, 8);
  // The machine slows down (other load): after a window of new steps only the new law is remembered.
  Train(&m, kLawB, StepCostModel::kWindow, 9);
  ExpectPredictsLaw(m, kLawB, 0.05, 10);
}

// Predictions over a spread of shapes are finite and never negative.
void ExpectSanePredictions(const StepCostModel& m) {
  for (int64_t rows : {1, 2, 16, 256, 4096})
    for (int64_t held : {0, 100, 100000}) {
      const double p = m.PredictMs({rows, AttentionWork(held, rows)});
      EXPECT_TRUE(std::isfinite(p)) << rows << " " << held;
      EXPECT_GE(p, 0) << rows << " " << held;
    }
}

TEST(StepCostModel, OneShapeOnlyGivesSanePredictions) {
  // Steady decode of one stream: every step the same shape, so rows and attention are collinear.
  StepCostModel m;
  const StepShape s{1, AttentionWork(500, 1)};
  for (int i = 0; i < 2 * StepCostModel::kWindow; ++i) m.Record(s, 3.0);
  ExpectSanePredictions(m);
  if (m.ready()) {
    EXPECT_NEAR(m.PredictMs(s), 3.0, 0.03);  // it must at least reproduce what it saw
  }
  Train(&m, kLawA, StepCostModel::kWindow, 18);  // varied steps later: no lasting harm
  ExpectPredictsLaw(m, kLawA, 0.05, 19);
}

TEST(StepCostModel, DegenerateTimesGiveSanePredictions) {
  {  // constant time whatever the shape
    StepCostModel m;
    for (const StepShape& s : VariedShapes(30, 11)) m.Record(s, 4.0);
    ExpectSanePredictions(m);
  }
  {  // time falling with work (noise from elsewhere): must not extrapolate below zero
    StepCostModel m;
    for (const StepShape& s : VariedShapes(30, 12))
      m.Record(s, std::max(0.1, 50.0 - 0.2 * static_cast<double>(s.rows)));
    ExpectSanePredictions(m);
  }
  {  // zero times
    StepCostModel m;
    for (const StepShape& s : VariedShapes(30, 13)) m.Record(s, 0.0);
    ExpectSanePredictions(m);
  }
  {  // two shapes only, same rows: attention alone varies
    StepCostModel m;
    for (int i = 0; i < 20; ++i) {
      const StepShape s{4, AttentionWork(i % 2 ? 10 : 5000, 4)};
      m.Record(s, kLawA(s));
    }
    ExpectSanePredictions(m);
  }
}

TEST(PromptRowsWithin, MaxRowsWhenNotReady) {
  StepCostModel m;
  const StepShape base{4, AttentionWork(1000, 4)};
  EXPECT_EQ(m.PromptRowsWithin(base, 1000, 0.001, 16, 256), 256);
  Train(&m, kLawA, StepCostModel::kMinSamples - 1, 14);
  ASSERT_FALSE(m.ready());
  EXPECT_EQ(m.PromptRowsWithin(base, 1000, 0.001, 16, 256), 256);
}

TEST(PromptRowsWithin, TightAndLooseTargets) {
  StepCostModel m;
  Train(&m, kLawA, 20, 15);
  ASSERT_TRUE(m.ready());
  const StepShape base{4, 4 * AttentionWork(1000, 1)};
  // Below the decode rows' own cost: the floor, so the prompt still advances.
  EXPECT_EQ(m.PromptRowsWithin(base, 1000, 1.0, 16, 256), 16);
  // Generous: everything.
  EXPECT_EQ(m.PromptRowsWithin(base, 1000, 1e6, 16, 256), 256);
  // In between: 2 + 0.5 (4 + n) + 1e-5 (4004 + 1000 n + n (n + 1) / 2) ≤ 40 → n ≈ 71.
  const int64_t n = m.PromptRowsWithin(base, 1000, 40.0, 16, 256);
  EXPECT_GT(n, 16);
  EXPECT_LT(n, 256);
  EXPECT_NEAR(static_cast<double>(n), 71, 3);
}

TEST(PromptRowsWithin, RandomizedBoundsAndMaximality) {
  StepCostModel m;
  Train(&m, kLawA, 40, 16);
  ASSERT_TRUE(m.ready());
  std::mt19937 rng(17);
  for (int trial = 0; trial < 500; ++trial) {
    const StepShape base{std::uniform_int_distribution<int64_t>(0, 32)(rng),
                         std::uniform_real_distribution<double>(0, 2e5)(rng)};
    const int64_t held = std::uniform_int_distribution<int64_t>(0, 8000)(rng);
    const double target = std::uniform_real_distribution<double>(0.5, 200)(rng);
    const int64_t max_rows = std::uniform_int_distribution<int64_t>(1, 512)(rng);
    const int64_t min_rows = std::uniform_int_distribution<int64_t>(0, max_rows)(rng);
    const int64_t n = m.PromptRowsWithin(base, held, target, min_rows, max_rows);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " base " << base.rows << "/" << base.attn << " held "
                                      << held << " target " << target << " min " << min_rows << " max " << max_rows);
    ASSERT_GE(n, min_rows);
    ASSERT_LE(n, max_rows);
    auto predict = [&](int64_t k) { return m.PredictMs({base.rows + k, base.attn + AttentionWork(held, k)}); };
    if (n > min_rows) {
      EXPECT_LE(predict(n), target);  // above the floor it fits
    }
    if (n < max_rows) {
      EXPECT_GT(predict(n + 1), target);  // and it is the most that fits
    }
  }
}

}  // namespace
}  // namespace ember
