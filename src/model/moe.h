// The mixture-of-experts FFN (qwen3moe), as llama.cpp 80fb11a computes it (src/llama-graph.cpp
// build_moe_ffn with softmax gating and normalised top-k weights; read, not copied). For each row x:
//
//   p = softmax(x · ffn_gate_inp)                    (router: one probability per expert)
//   the k = n_expert_used largest p, in descending order (ties: the lower expert index first)
//   w_j = p_j / max(sum of the k p's, 2^-14)          (norm_w: both archs)
//   out = sum over j in that order of w_j * down_j(silu(gate_j · x) * (up_j · x))
//   qwen35moe: out += sigmoid(x · ffn_gate_inp_shexp) * shared(x), shared a dense SwiGLU FFN on every row
//
// Experts read once per step: the rows of a step (a prefill chunk, a batch of decodes, both) are grouped
// by expert, and each expert routed to by any row runs one matmul over all of its rows; an expert no row
// chose is never read. Batch invariance: each (row, expert) product is one MatMul row, bitwise the same
// whatever the other rows of its group (kernels/matmul.h), and each row sums its k outputs in its own
// fixed order, so a row's output does not depend on which rows share its step.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "model/op_times.h"

namespace ember {

// Routing of one row: ids[0..k) and weights[0..k) from the router logits [n_expert] (softmax, top k,
// normalised when `norm`). Exposed for tests.
void RouteRow(const float* logits, int64_t n_expert, int64_t k, bool norm, int32_t* ids, float* weights);

class MoeScratch {
 public:
  // Buffers for up to max_rows rows of `c` (a MoE model's config).
  void Resize(const ModelConfig& c, int64_t max_rows);

  // out [rows][n_embd] = the layer's expert mixture for xn [rows][n_embd].
  void Forward(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows, float* out,
               kernels::ThreadPool& pool, OpTimes* times);

  // Experts the last Forward read (each once), for bytes-per-token figures.
  int64_t experts_read() const { return experts_read_; }

 private:
  void Route(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows, kernels::ThreadPool& pool,
             OpTimes* times);
  void Group(const ModelConfig& c, const float* xn, int64_t rows, kernels::ThreadPool& pool, OpTimes* times);
  void RunExperts(const ModelConfig& c, const LayerWeights& w, int64_t rows, kernels::ThreadPool& pool,
                  OpTimes* times);
  // out = the weighted sum of each row's expert outputs.
  void Combine(const ModelConfig& c, int64_t rows, float* out, kernels::ThreadPool& pool, OpTimes* times);
  // out += the gated shared expert of every row (qwen35moe).
  void SharedExpert(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows, float* out,
                    kernels::ThreadPool& pool, OpTimes* times);

  // One chosen expert's matrices (groups_ point into views_, which is complete before they are made).
  struct ExpertViews {
    kernels::WeightView gate, up, down;
    int64_t e;
  };

  std::vector<float> logits_;    // [T][n_expert]   router logits
  std::vector<int32_t> ids_;     // [T][k]          chosen experts, in summation order
  std::vector<float> weights_;   // [T][k]          their weights
  std::vector<int64_t> slot_;    // [T][k]          each choice's row in the grouped buffers
  std::vector<int64_t> first_;   // [n_expert + 1]  expert e's grouped rows are [first_[e], first_[e + 1])
  std::vector<float> xg_;        // [T * k][n_embd] inputs grouped by expert
  std::vector<float> gate_;      // [T * k][n_ff_exp]
  std::vector<float> up_;        // [T * k][n_ff_exp]
  std::vector<float> down_;      // [T * k][n_embd] each choice's expert output
  std::vector<float> sh_gate_, sh_up_;   // [T][n_ff_shexp]  the shared expert (qwen35moe)
  std::vector<float> sh_out_;            // [T][n_embd]
  std::vector<float> sh_logit_;          // [T]             its gate, before the sigmoid
  std::vector<int64_t> scratch_next_;  // Group's fill cursor per expert
  std::vector<ExpertViews> views_;       // the experts this step reads
  std::vector<kernels::MatMulGroup> groups_;
  int64_t experts_read_ = 0;
};

}  // namespace ember
