// Shared helpers for the kernels tests: random weights in any supported type.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "format/quant.h"
#include "kernels/fast_exp.h"
#include "kernels/matmul.h"

namespace ember::kernels::testing {

inline const GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                     GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                     GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(rng);
  return v;
}

// An owned weight matrix quantized from normal(0, 1) values; `view` points into `bytes`.
struct TestWeight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

inline TestWeight MakeWeight(GgmlType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  TestWeight w;
  const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
  w.bytes.resize(rb * static_cast<size_t>(n_out));
  const std::vector<float> f = RandomFloats(static_cast<size_t>(n_in * n_out), seed);
  for (int64_t o = 0; o < n_out; ++o) {
    Status st = Quantize(type, f.data() + o * n_in, w.bytes.data() + o * rb, static_cast<size_t>(n_in));
    if (!st.ok()) std::abort();
  }
  w.view = WeightView{type, w.bytes.data(), n_in, n_out, rb};
  return w;
}

// softmax.cc's documented order written out: v[i] = ExpF(v[i] - max) in place, and the sum of each
// group of 8 by the Hsum8 tree in f32 added to a double in group order, then the tail one by one.
inline double ExpSumReference(float* v, int n, float max) {
  double sum = 0;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    float* g = v + i;
    for (int l = 0; l < 8; ++l) g[l] = ExpF(g[l] - max);
    sum += static_cast<double>(((g[0] + g[4]) + (g[2] + g[6])) + ((g[1] + g[5]) + (g[3] + g[7])));
  }
  for (; i < n; ++i) sum += static_cast<double>(v[i] = ExpF(v[i] - max));
  return sum;
}

// Smallest n_in multiple of the type's block that is >= n.
inline int64_t RoundUpToBlock(GgmlType type, int64_t n) {
  const int64_t b = TypeInfo(type).block_elems;
  return (n + b - 1) / b * b;
}

}  // namespace ember::kernels::testing
