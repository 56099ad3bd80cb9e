// The transformer forward pass over one ubatch, with every activation buffer allocated up front.
//
// Batch invariance (docs/cache-spec.md §6): the logits of position i are bitwise identical whether i is
// computed inside a prefill ubatch of any size, as a single decode step, or as one row of a step that
// also carries other sequences' rows (RunBatch). Every op computes each token's row by a fixed sequence
// of operations (kernels contract), and attention for the query at position p of a sequence reads that
// sequence's keys [0, p] (a window layer: (p - n_swa, p]) block by block in position order — nothing
// depends on n_tok or on which other rows share the step.
//
// Thread-safety: a ForwardContext belongs to one sequence and is used by one thread at a time; the
// Model it reads is shared read-only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/attention_head.h"
#include "kernels/thread_pool.h"
#include "kv/kv_state.h"
#include "model/delta_net.h"
#include "model/model.h"
#include "model/moe.h"
#include "model/op_times.h"

namespace ember {

enum class LogitsMode {
  kNone,  // fill the KV state only
  kLast,  // logits of the ubatch's last token
  kAll,   // logits of every token (rows counted against max_logit_rows unless all_logits)
};

struct ForwardOptions {
  int64_t max_ubatch = 512;    // most tokens per Run / RunBatch (all slices together)
  int64_t max_ctx = 0;         // most positions a sequence may hold (0: the model's context_length)
  bool all_logits = false;     // size the logits buffer for LogitsMode::kAll
  // Logit rows one RunBatch may ask for (a kLast slice takes one, a kAll slice one per token; speculative
  // verification uses short kAll slices without all_logits); all_logits: max_ubatch.
  int64_t max_logit_rows = 1;
};

// One sequence's part of a batched forward: n tokens at positions [kv->n_pos(), kv->n_pos() + n).
struct ForwardSlice {
  KvState* kv = nullptr;
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  LogitsMode mode = LogitsMode::kNone;
};

class ForwardContext {
 public:
  ForwardContext(const Model& model, const ForwardOptions& options);

  // Forwards tokens at positions [kv.n_pos(), kv.n_pos() + n), stores their K/V into kv and commits
  // them. 1 <= n <= max_ubatch. On error kv is unchanged (still n_pos() positions).
  Status Run(KvState& kv, const int32_t* tokens, int64_t n, LogitsMode mode, kernels::ThreadPool& pool);

  // Several sequences in one pass: every weight is read once for all their rows. (*status)[i] says how
  // slice i went: a slice that cannot run (bad token id, context full, KV allocation failed) is left out
  // with its KV unchanged, and the others run as if it had never been there. The returned Status is an
  // error only when the batch itself is malformed (no slices, rows over max_ubatch, logit rows over
  // max_logit_rows, one KvState twice); then nothing ran.
  Status RunBatch(std::span<const ForwardSlice> slices, kernels::ThreadPool& pool, std::vector<Status>* status);

  // Rows of n_vocab logits from the last Run: 1 row (kLast) or n rows (kAll).
  const float* logits() const { return logits_.data(); }
  // The logits of slice i of the last RunBatch (its kLast row or first kAll row); null for a slice with
  // kNone or one that failed.
  const float* slice_logits(size_t i) const {
    return i < slice_logit_row_.size() && slice_logit_row_[i] >= 0
               ? logits_.data() + slice_logit_row_[i] * n_vocab()
               : nullptr;
  }
  int64_t n_vocab() const { return model_.config().n_vocab; }
  int64_t max_ctx() const { return opts_.max_ctx; }
  int64_t max_ubatch() const { return opts_.max_ubatch; }
  OpTimes& times() { return times_; }

 private:
  void Embed(const int32_t* tokens, int64_t row0, int64_t n, kernels::ThreadPool& pool);
  void NormRows(const float* x, const float* w, int64_t n, float* y, kernels::ThreadPool& pool);
  // The slices that run in this pass, with their first row in the activations.
  struct Live {
    KvState* kv;
    int64_t row0, n, pos0;
    const int32_t* tokens;
    LogitsMode mode;
    size_t slice;  // index in the RunBatch call
  };
  // One (slice, token tile) of attention's work list.
  struct AttnTile {
    const Live* slice;
    int64_t t0, t1;  // rows of the slice (relative to its row0)
    int64_t keys;    // the most keys one of its queries sees
  };
  void Attention(std::span<const Live> live, int layer, kernels::ThreadPool& pool);
  void FeedForward(const LayerWeights& w, int64_t n, kernels::ThreadPool& pool);
  // proj [T][n_embd] = the attention block of `layer` for xn (K/V stored, attention, output gate, wo).
  void AttentionBlock(std::span<const Live> live, int layer, int64_t n, kernels::ThreadPool& pool);
  // proj [T][n_embd] = the gated delta net of `layer` for xn (model/delta_net.h).
  void DeltaNetBlock(std::span<const Live> live, int layer, int64_t n, kernels::ThreadPool& pool);
  // Logits of the activation rows `rows` (out_rows_, in order) into logits_ rows 0..size-1.
  void Output(kernels::ThreadPool& pool);

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
  std::vector<float> logits_;  // [T or max_logit_rows][n_vocab]
  std::vector<float> qg_;      // attn_gate archs: [T][2 * q_dim]  joint q|gate projection
  std::vector<float> att_gate_;  // attn_gate archs: [T][q_dim]    the attention output gate
  DeltaNetScratch delta_;      // hybrid archs: the delta-net layers' buffers
  std::vector<DeltaNetSlice> delta_slices_;  // per pass (reused)
  MoeScratch moe_;             // MoE archs: routing and the grouped expert buffers
  std::vector<int64_t> pos_;   // [T] each row's position in its sequence
  std::vector<int64_t> out_rows_;         // activation rows whose logits the pass computes
  std::vector<int64_t> slice_logit_row_;  // per slice of the last RunBatch: its first logits row, -1 none
  std::vector<Live> live_;                // per RunBatch: the slices that run (reused: no allocation per step)
  std::vector<AttnTile> tiles_;           // per Attention call (reused likewise)
  // Per pool thread attention scratch.
  std::vector<float> scores_;      // [threads][tile queries][keys]
  std::vector<uint16_t> half_;     // [threads][tile queries][keys + head_dim_k]  fp16 q and probabilities
  std::vector<kernels::AttnQuery> tile_queries_;  // [threads][tile queries]
};

}  // namespace ember
