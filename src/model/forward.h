// The transformer forward pass over one ubatch, with every activation buffer allocated up front.
//
// Batch invariance (docs/cache-spec.md §6): the logits of position i are bitwise identical whether i is
// computed inside a prefill ubatch of any size or as a single decode step. Every op computes each
// token's row by a fixed sequence of operations (kernels contract), and attention for the query at
// position p reads keys [0, p] (a window layer: (p - n_swa, p]) block by block in position order —
// nothing depends on n_tok.
//
// Thread-safety: a ForwardContext belongs to one sequence and is used by one thread at a time; the
// Model it reads is shared read-only.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention_head.h"
#include "kernels/thread_pool.h"
#include "kv/kv_state.h"
#include "model/model.h"
#include "model/op_times.h"

namespace ember {

enum class LogitsMode {
  kNone,  // fill the KV state only
  kLast,  // logits of the ubatch's last token
  kAll,   // logits of every token (needs ForwardOptions::all_logits)
};

struct ForwardOptions {
  int64_t max_ubatch = 512;  // most tokens per Run
  int64_t max_ctx = 0;       // most positions a sequence may hold (0: the model's context_length)
  bool all_logits = false;   // size the logits buffer for LogitsMode::kAll
};

class ForwardContext {
 public:
  ForwardContext(const Model& model, const ForwardOptions& options);

  // Forwards tokens at positions [kv.n_pos(), kv.n_pos() + n), stores their K/V into kv and commits
  // them. 1 <= n <= max_ubatch. On error kv is unchanged (still n_pos() positions).
  Status Run(KvState& kv, const int32_t* tokens, int64_t n, LogitsMode mode, kernels::ThreadPool& pool);

  // Rows of n_vocab logits from the last Run: 1 row (kLast) or n rows (kAll).
  const float* logits() const { return logits_.data(); }
  int64_t n_vocab() const { return model_.config().n_vocab; }
  int64_t max_ctx() const { return opts_.max_ctx; }
  int64_t max_ubatch() const { return opts_.max_ubatch; }
  OpTimes& times() { return times_; }

 private:
  void Embed(const int32_t* tokens, int64_t n, kernels::ThreadPool& pool);
  void NormRows(const float* x, const float* w, int64_t n, float* y, kernels::ThreadPool& pool);
  void Attention(const KvState& kv, int layer, int64_t n, kernels::ThreadPool& pool);
  void FeedForward(const LayerWeights& w, int64_t n, kernels::ThreadPool& pool);
  void Output(int64_t first_row, int64_t n_rows, kernels::ThreadPool& pool);

  const Model& model_;
  ForwardOptions opts_;
  OpTimes times_;
  // Activations for a ubatch of T <= max_ubatch tokens.
  std::vector<float> x_;       // [T][n_embd]    residual stream
  std::vector<float> xn_;      // [T][n_embd]    normed input of the current block
  std::vector<float> q_;       // [T][n_head * head_dim_k]
  std::vector<float> k_;       // [T][n_head_kv * head_dim_k]
  std::vector<float> v_;       // [T][n_head_kv * head_dim_v]
  std::vector<float> att_;     // [T][n_head * head_dim_v]   attention output before wo
  std::vector<float> proj_;    // [T][n_embd]    wo / ffn_down output
  std::vector<float> gate_;    // [T][n_ff]
  std::vector<float> up_;      // [T][n_ff]
  std::vector<float> rope_;    // [T][rope_n_dims]  cos/sin per position
  std::vector<float> rope_swa_;  // [T][rope_n_dims]  the same for window layers' RoPE base (gemma3)
  std::vector<float> logits_;  // [T or 1][n_vocab]
  // Per pool thread attention scratch.
  std::vector<float> scores_;      // [threads][tile queries][keys]
  std::vector<uint16_t> half_;     // [threads][tile queries][keys + head_dim_k]  fp16 q and probabilities
  std::vector<kernels::AttnQuery> tile_queries_;  // [threads][tile queries]
};

}  // namespace ember
