// The gated delta net layer of qwen35 hybrids (linear attention with a constant-size recurrent state),
// as llama.cpp 80fb11a computes it (src/models/qwen35.cpp, delta-net-base.cpp and ggml's CPU
// gated_delta_net; read, not copied). For each token of a sequence, in order:
//
//   qkv = x · attn_qkv          z = x · attn_gate          (projections: all rows of the step at once)
//   beta = sigmoid(x · ssm_beta)          g = softplus(x · ssm_alpha + ssm_dt) * ssm_a   (per v head)
//   c = silu(causal conv1d over the last ssm_d_conv qkv rows)   (the previous d_conv - 1 live in the state)
//   q, k = L2-normalised heads of c;  v = the value part of c   (q/k head = v head mod group_count)
//   per v head, with M [S x S] (row j = value dim):  M *= exp(g);  d = (v - M k) * beta;  M += d kᵀ;
//                                                    o = (M q) / sqrt(S)
//   out = (rms_norm(o, ssm_norm) * silu(z)) · ssm_out
//
// Batch invariance: the projections are row-wise; the conv and the recurrence advance one token at a
// time in the same order of operations whatever the chunking, so a prompt forwarded in any pieces, or
// batched with other sequences, leaves bitwise the same state and outputs (docs/hybrid.md says why the
// chunked matrix form of the recurrence is not used: it is exact only in real arithmetic).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/thread_pool.h"
#include "kv/kv_state.h"
#include "model/model.h"
#include "model/op_times.h"

namespace ember {

// One sequence's rows of the step: rows [row0, row0 + n) of the activations, its state in kv.
struct DeltaNetSlice {
  KvState* kv;
  int64_t row0;
  int64_t n;
};

class DeltaNetScratch {
 public:
  // Buffers for up to max_rows rows of `c` (a hybrid model's config).
  void Resize(const ModelConfig& c, int64_t max_rows);

  // out [rows][n_embd] = the layer's output for xn [rows][n_embd]; advances each slice's recurrent state
  // of `layer` (which Reserve made writable) past its rows.
  void Forward(const ModelConfig& c, const LayerWeights& w, int layer, std::span<const DeltaNetSlice> slices,
               const float* xn, int64_t rows, float* out, kernels::ThreadPool& pool, OpTimes* times);

 private:
  void Conv(const ModelConfig& c, const LayerWeights& w, int layer, std::span<const DeltaNetSlice> slices,
            kernels::ThreadPool& pool);
  void Recurrence(const ModelConfig& c, int layer, std::span<const DeltaNetSlice> slices, int64_t rows,
                  kernels::ThreadPool& pool);

  std::vector<float> qkv_;    // [T][conv channels]  projection, then conv + silu output (q, k normalised)
  std::vector<float> conv_;   // [T][conv channels]
  std::vector<float> z_;      // [T][d_inner]
  std::vector<float> beta_;   // [T][dt_rank]
  std::vector<float> g_;      // [T][dt_rank]  decay exp(g)
  std::vector<float> o_;      // [T][d_inner]  recurrence output, then the gated norm
};

}  // namespace ember
