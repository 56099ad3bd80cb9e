// MatMulGrouped (a mixture of experts' matmul: each weight over its own run of rows) is bitwise one
// MatMul per group: groups of 0, 1, a few and many rows, in any order, on 1 and 2 threads, and for
// weights of different dot types (the one-region path then falls back to one call per group).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/matmul.h"

namespace ember::kernels {
namespace {

using testing::BitwiseEqual;
using testing::MakeWeight;
using testing::RandomFloats;

void CheckGroups(GgmlType type_a, GgmlType type_b, const std::vector<int64_t>& sizes) {
  constexpr int64_t kIn = 256, kOut = 48;
  int64_t rows = 0;
  for (int64_t s : sizes) rows += s;
  const std::vector<float> x = RandomFloats(static_cast<size_t>(std::max<int64_t>(rows, 1) * kIn), 7);
  std::vector<testing::TestWeight> weights;
  for (size_t i = 0; i < sizes.size(); ++i) {
    weights.push_back(MakeWeight(i % 2 == 0 ? type_a : type_b, kIn, kOut + 16 * static_cast<int64_t>(i % 3),
                                 100 + static_cast<uint32_t>(i)));
  }
  ThreadPool one(1), two(2);
  for (ThreadPool* pool : {&one, &two}) {
    std::vector<std::vector<float>> got(sizes.size()), want(sizes.size());
    std::vector<MatMulGroup> groups;
    int64_t t0 = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const WeightView& w = weights[i].view;
      got[i].assign(static_cast<size_t>(sizes[i] * w.n_out), -1.0f);
      want[i].assign(got[i].size(), -2.0f);
      MatMul(w, x.data() + t0 * kIn, sizes[i], want[i].data(), *pool);
      groups.push_back({&w, t0, sizes[i], got[i].data()});
      t0 += sizes[i];
    }
    MatMulGrouped(groups.data(), static_cast<int>(groups.size()), x.data(), rows, *pool);
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_TRUE(BitwiseEqual(got[i], want[i])) << GgmlTypeName(type_a) << "/" << GgmlTypeName(type_b) << " group "
                                                << i << " of " << sizes[i] << " rows, threads " << pool->size();
    }
  }
}

TEST(MatMulGroupedTest, EachGroupIsBitwiseItsOwnMatMul) {
  const std::vector<std::vector<int64_t>> layouts = {
      {1, 1, 1, 1, 1, 1, 1, 1},    // a decode step: one row per chosen expert
      {3, 0, 17, 1, 40, 2, 9},     // a prefill chunk: uneven groups, one empty
      {64},                        // one group
  };
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    for (const auto& sizes : layouts) CheckGroups(t, t, sizes);
  }
  // Mixed dot types (Q8_0 rows and Q4_K rows): one call per group, still bitwise.
  CheckGroups(GgmlType::Q8_0, GgmlType::Q4_K, {2, 5, 1, 8});
}

}  // namespace
}  // namespace ember::kernels
