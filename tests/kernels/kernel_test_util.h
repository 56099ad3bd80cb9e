// Shared helpers for the kernels tests: random weights in any supported type, directly made quantized
// activations, bitwise comparison and the MatMul invariance check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/fast_exp.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"

namespace ember::kernels::testing {

inline const GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,
                                     GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,
                                     GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::Q2_K,
                                     GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

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

inline bool BitwiseEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Quantized activations made directly (not through ActBatch), so any int8 pattern can be tested —
// -128 included, which ActBatch never produces but the kernels must take: per token n_in quants, one
// random positive scale per block of `block` elements, exact sums per `group` elements (32: Q8_0's
// per block; 16: Q8_K's per-16 sums). ActRow views into the owned arrays.
enum class QuantPattern { kRandom, kAllMin, kAllMax, kAlternating };  // random / -128 / +127 / -128, +127, ...
struct QuantActs {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
  std::vector<ActRow> rows;
};

inline QuantActs MakeQuantActs(int64_t block, int64_t group, QuantPattern pattern, int64_t n_in, int n_tok,
                               uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> qd(-128, 127);
  std::uniform_real_distribution<float> dd(1e-3f, 0.1f);
  const int64_t nb = n_in / block, ns = n_in / group;
  QuantActs a;
  a.q.resize(static_cast<size_t>(n_in * n_tok));
  a.d.resize(static_cast<size_t>(nb * n_tok));
  a.sum.resize(static_cast<size_t>(ns * n_tok));
  for (size_t i = 0; i < a.q.size(); ++i) {
    int v = qd(rng);
    if (pattern == QuantPattern::kAllMin) v = -128;
    if (pattern == QuantPattern::kAllMax) v = 127;
    if (pattern == QuantPattern::kAlternating) v = i % 2 == 0 ? -128 : 127;
    a.q[i] = static_cast<int8_t>(v);
  }
  for (auto& f : a.d) f = dd(rng);
  for (size_t s = 0; s < a.sum.size(); ++s) {
    int32_t total = 0;
    for (int64_t i = 0; i < group; ++i) total += a.q[s * group + i];
    a.sum[s] = total;
  }
  for (int t = 0; t < n_tok; ++t) {
    ActRow r;
    r.q = a.q.data() + t * n_in;
    r.d = a.d.data() + t * nb;
    r.sum = a.sum.data() + t * ns;
    a.rows.push_back(r);
  }
  return a;
}

// The invariance check of the MatMul tests: MatMul(w) over the first n_tok rows of x, for every n_tok
// in `counts` and every pool, is bitwise `ref` (the reference's rows for all of x), and so is each
// token computed alone. Uses gtest assertions (call through ASSERT_NO_FATAL_FAILURE).
inline void ExpectMatMulInvariant(const WeightView& w, const std::vector<float>& x, const std::vector<float>& ref,
                                  const std::vector<int64_t>& counts, const std::vector<ThreadPool*>& pools) {
  const int64_t n_tok_max = static_cast<int64_t>(x.size()) / w.n_in;
  std::vector<float> alone(ref.size());
  for (int64_t t = 0; t < n_tok_max; ++t) MatMul(w, x.data() + t * w.n_in, 1, alone.data() + t * w.n_out, *pools[0]);
  ASSERT_TRUE(BitwiseEqual(alone, ref)) << "tokens computed alone";
  for (int64_t n_tok : counts) {
    const std::vector<float> want(ref.begin(), ref.begin() + n_tok * w.n_out);
    for (ThreadPool* pool : pools) {
      std::vector<float> got(want.size(), -1.0f);
      MatMul(w, x.data(), n_tok, got.data(), *pool);
      ASSERT_TRUE(BitwiseEqual(got, want)) << "n_tok=" << n_tok << " threads=" << pool->size();
    }
  }
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
