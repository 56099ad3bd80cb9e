// Small KvStates with deterministic contents for the cold-tier tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kv/kv_state.h"

namespace ember::coldtier_test {

inline KvConfig SmallConfig() { return KvConfig::Uniform(2, 2, 4, 3, KvDtype::kF32, 4); }

// A hybrid (Qwen3.5 shape in miniature): layers 0-2 recurrent with 1000 floats each, layer 3 full.
inline KvConfig HybridConfig() {
  KvConfig c = KvConfig::Uniform(4, 2, 4, 3, KvDtype::kF32, 4);
  const LayerStateSpec r{StateKind::kRecurrent, 0, 1000};
  c.kinds = {r, r, r, LayerStateSpec{}};
  return c;
}

// A state of n positions whose values depend on (tag, layer, pos, element); recurrent layers get a
// state that depends on (tag, layer, n, element).
inline KvState MakeState(int64_t n, int tag, const KvConfig& c = SmallConfig()) {
  KvState s = std::move(KvState::Create(c)).value();
  EXPECT_TRUE(s.Reserve(n).ok());
  std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.kind(l).kind != StateKind::kRecurrent) continue;
    float* st = s.RecurrentState(l);
    for (int64_t i = 0; i < c.kind(l).state_floats; ++i) st[i] = tag * 10.0f + l + n * 0.5f + i * 1e-3f;
  }
  for (int64_t p = 0; p < n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      if (c.kind(l).kind == StateKind::kRecurrent) continue;
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) k[i] = tag * 1000.0f + l * 100.0f + p + i * 0.125f;
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) v[i] = -(tag * 1000.0f + l * 100.0f + p + i * 0.25f);
      s.StoreK(l, p, k.data());
      s.StoreV(l, p, v.data());
    }
  }
  s.Commit(n);
  return s;
}

inline std::vector<uint8_t> Bytes(const KvState& s) {
  VectorSink sink;
  EXPECT_TRUE(s.Serialize(sink).ok());
  return sink.Take();
}

inline std::vector<int32_t> Tokens(int64_t n, int32_t base = 100) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(base + static_cast<int32_t>(i));
  return t;
}

}  // namespace ember::coldtier_test
