#include "bench/stability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>

#include "bench/stats.h"

namespace ember::bench {
namespace {

// A callback that hands out queued values and counts how often it was asked.
struct Queue {
  std::deque<double> values;
  int calls = 0;
  std::function<StatusOr<double>()> Fn() {
    return [this]() -> StatusOr<double> {
      ++calls;
      if (values.empty()) return Internal("queue exhausted");
      double v = values.front();
      values.pop_front();
      return v;
    };
  }
};

TEST(Stats, MedianAndPercentiles) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({10, 20, 30, 40, 50}, 0), 10);
  EXPECT_DOUBLE_EQ(Percentile({10, 20, 30, 40, 50}, 100), 50);
  EXPECT_DOUBLE_EQ(Percentile({10, 20, 30, 40, 50}, 95), 48);
  EXPECT_DOUBLE_EQ(Median({}), 0);
  EXPECT_TRUE(std::isinf(SpreadRatio({0, 1})));
  EXPECT_DOUBLE_EQ(SpreadRatio({2, 3}), 1.5);
}

TEST(Stability, TightSeriesIsStableWithoutExtraRounds) {
  Queue q;
  auto r = StabilizeSeries({100, 104, 102, 101, 110}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kStable);
  EXPECT_EQ(q.calls, 0);
  EXPECT_DOUBLE_EQ(r->metrics[0].value, 102);
  EXPECT_NEAR(r->metrics[0].spread, 1.10, 1e-9);
}

TEST(Stability, NoisyThroughputStabilizesOnFastCluster) {
  // One slow outlier (interference); one extra round brings three fast runs within 5%.
  Queue q{{99}};
  auto r = StabilizeSeries({100, 60, 101, 70, 80}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kStabilized);
  EXPECT_EQ(q.calls, 1);
  EXPECT_EQ(r->extra_rounds, 1);
  EXPECT_DOUBLE_EQ(r->metrics[0].value, 100);  // median of {101, 100, 99}
  EXPECT_EQ(r->rounds.size(), 6u);
}

TEST(Stability, FastClusterNeedsSeveralExtraRounds) {
  // After 70 the fastest three are {100, 80, 70}; after 98 {100, 98, 80}; after 97 they agree.
  Queue q{{70, 98, 97}};
  auto r = StabilizeSeries({100, 60, 80, 65, 62}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kStabilized);
  EXPECT_EQ(q.calls, 3);
  EXPECT_DOUBLE_EQ(r->metrics[0].value, 98);
}

TEST(Stability, NoAgreementAfterThreeExtraRoundsIsUnstable) {
  Queue q{{70, 90, 75, 100}};
  auto r = StabilizeSeries({100, 60, 80, 65, 62}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kUnstable);
  EXPECT_EQ(q.calls, 3);  // never a fourth extra round
  EXPECT_EQ(q.values.size(), 1u);
}

TEST(Stability, LatencyFastClusterIsTheSmallestValues) {
  // TTFT in ms: smaller is faster. The fast cluster is {50, 51, 52}; a larger-is-faster reading
  // would have picked {90, 80, 52} and called the cell unstable.
  Queue q{{52}};
  auto r = StabilizeSeries({50, 90, 51, 80, 70}, Direction::kLowerIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kStabilized);
  EXPECT_DOUBLE_EQ(r->metrics[0].value, 51);
}

TEST(Stability, LatencyReadAsThroughputWouldBeUnstable) {
  Queue q{{52, 53, 54}};
  auto r = StabilizeSeries({50, 90, 51, 80, 70}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kUnstable);
}

TEST(Stability, FailedExtraRoundPropagates) {
  Queue q;  // empty: the first extra round fails
  auto r = StabilizeSeries({100, 50}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(Stability, NoCallbackMeansNoisyIsUnstable) {
  auto r = StabilizeSeries({100, 50, 100}, Direction::kHigherIsFaster, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kUnstable);
}

TEST(Stability, ZeroSpeedRunIsNeverTight) {
  Queue q{{0, 0, 0}};
  auto r = StabilizeSeries({0, 0, 0}, Direction::kHigherIsFaster, q.Fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, StabilityTag::kUnstable);
}

TEST(Stability, EmptySeriesIsAnError) {
  auto r = StabilizeSeries({}, Direction::kHigherIsFaster, nullptr);
  EXPECT_FALSE(r.ok());
}

TEST(Stability, CellIsAsTrustworthyAsItsWorstMetric) {
  // Prefill is tight; decode is noisy and stabilizes after one extra round.
  std::vector<std::vector<double>> rounds = {{300, 40}, {305, 30}, {302, 41}};
  int calls = 0;
  MoreRound more = [&]() -> StatusOr<std::vector<double>> {
    ++calls;
    return std::vector<double>{301, 40.5};
  };
  auto r = StabilizeCell(rounds, {{"prefill", Direction::kHigherIsFaster}, {"decode", Direction::kHigherIsFaster}},
                         more);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r->tag, StabilityTag::kStabilized);
  EXPECT_EQ(r->metrics[0].tag, StabilityTag::kStable);
  EXPECT_DOUBLE_EQ(r->metrics[0].value, 301.5);  // median of all four prefill rounds
  EXPECT_EQ(r->metrics[1].tag, StabilityTag::kStabilized);
  EXPECT_DOUBLE_EQ(r->metrics[1].value, 40.5);
}

TEST(Stability, NanSamplesAreIgnored) {
  const double nan = std::nan("");
  auto j = JudgeSeries({nan, 10, 10.5}, Direction::kHigherIsFaster, {}, 0);
  EXPECT_EQ(j.state, SeriesState::kStable);
  EXPECT_DOUBLE_EQ(j.value, 10.25);
  auto all_nan = JudgeSeries({nan}, Direction::kHigherIsFaster, {}, 0);
  EXPECT_TRUE(std::isnan(all_nan.value));
}

TEST(Stability, TagNamesAndOrder) {
  EXPECT_STREQ(StabilityTagName(StabilityTag::kStabilized), "stabilized");
  EXPECT_EQ(WorseTag(StabilityTag::kStable, StabilityTag::kUnstable), StabilityTag::kUnstable);
  EXPECT_EQ(WorseTag(StabilityTag::kStabilized, StabilityTag::kStable), StabilityTag::kStabilized);
}

}  // namespace
}  // namespace ember::bench
