// A loaded Llama-family model (llama, qwen2, qwen3, gemma3): hyperparameters plus typed views of every weight,
// used in place from the GGUF memory map (no copy at load: startup costs a parse and a validation).
//
// Load validates every tensor the architecture needs — presence, type, shape — and reports the first
// problem naming the tensor; a malformed file never crashes.
//
// Thread-safety: immutable after Load; any number of sequences may run on one Model concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "kernels/matmul.h"
#include "kernels/packed_weights.h"
#include "kernels/thread_pool.h"
#include "kv/kv_state.h"
#include "model/arch.h"
#include "model/model_config.h"

namespace ember {

// One matrix per expert, stored as one 3-D tensor [n_in, n_out, n_expert] (ffn_*_exps): expert e's rows
// start stride bytes after expert e-1's.
struct ExpertMatrix {
  kernels::WeightView first;  // expert 0
  size_t stride = 0;
  kernels::WeightView Expert(int64_t e) const {
    kernels::WeightView v = first;
    v.data += static_cast<size_t>(e) * stride;
    return v;
  }
};

// One transformer block's weights. Norm weights/biases are f32 vectors inside the mmap.
struct LayerWeights {
  const float* attn_norm = nullptr;  // [n_embd]
  kernels::WeightView wq;            // n_embd -> n_head * head_dim_k
  kernels::WeightView wk;            // n_embd -> n_head_kv * head_dim_k
  kernels::WeightView wv;            // n_embd -> n_head_kv * head_dim_v
  kernels::WeightView wo;            // n_head * head_dim_v -> n_embd
  const float* bq = nullptr;         // qwen2: [q_dim]
  const float* bk = nullptr;         // qwen2: [kv_dim_k]
  const float* bv = nullptr;         // qwen2: [kv_dim_v]
  const float* q_norm = nullptr;     // qwen3, gemma3: [head_dim_k], RMS norm per head
  const float* k_norm = nullptr;     // qwen3, gemma3: [head_dim_k]
  const float* attn_post_norm = nullptr;  // gemma3: [n_embd], on the attention output (after wo)
  const float* ffn_norm = nullptr;   // [n_embd]
  const float* ffn_post_norm = nullptr;   // gemma3: [n_embd], on the FFN output (after ffn_down)
  kernels::WeightView w_gate;        // n_embd -> n_ff
  kernels::WeightView w_up;          // n_embd -> n_ff
  kernels::WeightView w_down;        // n_ff -> n_embd
  // Mixture of experts (ArchSpec::moe; model/moe.h). w_gate/w_up/w_down are unset there.
  kernels::WeightView moe_router;    // ffn_gate_inp: n_embd -> n_expert
  ExpertMatrix exp_gate;             // n_embd -> n_ff_exp, per expert
  ExpertMatrix exp_up;               // n_embd -> n_ff_exp
  ExpertMatrix exp_down;             // n_ff_exp -> n_embd
  kernels::WeightView shexp_inp;     // qwen35moe: ffn_gate_inp_shexp, n_embd -> 1 (the shared expert's gate)
  kernels::WeightView shexp_gate;    // n_embd -> n_ff_shexp
  kernels::WeightView shexp_up;      // n_embd -> n_ff_shexp
  kernels::WeightView shexp_down;    // n_ff_shexp -> n_embd
  // Gated delta net (qwen35 recurrent layers; model/delta_net.h). wq..wo and q/k norms are unset there.
  kernels::WeightView ssm_qkv;       // attn_qkv:  n_embd -> conv channels (q, k, v)
  kernels::WeightView ssm_z;         // attn_gate: n_embd -> ssm_d_inner (output gate z)
  kernels::WeightView ssm_beta;      // n_embd -> ssm_dt_rank (beta, before its sigmoid)
  kernels::WeightView ssm_alpha;     // n_embd -> ssm_dt_rank (decay input)
  kernels::WeightView ssm_out;       // ssm_d_inner -> n_embd
  const float* ssm_conv1d = nullptr; // [conv channels][ssm_d_conv]
  const float* ssm_dt = nullptr;     // [ssm_dt_rank] bias of alpha
  const float* ssm_a = nullptr;      // [ssm_dt_rank] -exp(A_log)
  const float* ssm_norm = nullptr;   // [ssm_d_state] gated RMS norm of each v head
};

class Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path);
  // Takes ownership of an already-parsed file.
  static StatusOr<std::unique_ptr<Model>> FromGguf(std::unique_ptr<GgufFile> file);

  const ModelConfig& config() const { return config_; }
  const ArchSpec& arch() const { return *arch_; }
  const GgufFile& gguf() const { return *file_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  // token_embd.weight: [n_vocab] rows of n_embd in its own type (dequantized one row at a time).
  const GgufTensorInfo& token_embd() const { return *token_embd_; }
  const float* output_norm() const { return output_norm_; }
  // output.weight, or token_embd.weight when the output is tied.
  const kernels::WeightView& output() const { return output_; }
  bool tied_output() const { return tied_output_; }
  // Bytes of all weights in the file's matrices and vectors the forward pass uses.
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Bytes one decoded token reads: weight_bytes less the experts it is not routed to (a MoE reads
  // n_expert_used of n_expert experts per layer; dense models read everything).
  uint64_t active_weight_bytes() const {
    if (expert_bytes_ == 0) return weight_bytes_;
    const auto n = static_cast<uint64_t>(config_.n_expert), k = static_cast<uint64_t>(config_.n_expert_used);
    return weight_bytes_ - expert_bytes_ + expert_bytes_ / n * k;  // every expert is the same size
  }
  // Bytes of all experts' matrices (0 for a dense model).
  uint64_t expert_bytes() const { return expert_bytes_; }

  // Repacks the matmul weights MatMul reads packed on this CPU — every layer matrix, and the output
  // matrix unless it is the (row-indexed) token embedding — into copies for the zmm GEMM kernels
  // (kernels/packed_weights.h) and points their views at them. Results do not change, bitwise. Call once,
  // before the model is shared. The originals stay mapped (a tail of n_out % 16 rows is read there).
  // `packed_one` is called after each view is packed (see kernels::PackedWeights::Pack).
  Status PackWeights(kernels::ThreadPool& pool,
                     const std::function<void(const kernels::WeightView&)>& packed_one = nullptr);
  // The copies PackWeights made (empty before, or when this CPU has no packed kernels).
  const kernels::PackedWeights& packed() const { return packed_; }
  // What PackWeights would pack on this CPU: bytes of the copies and how many matrices (`ember inspect`).
  uint64_t PackableBytes(int* tensors) const;
  // The mapped bytes PackWeights would replace on this CPU (start, length), one per matrix, in address
  // order: what load reads once, to pack, and then stops mapping (engine/weight_pages.h read_once).
  std::vector<std::pair<const uint8_t*, uint64_t>> PackableSources() const;

  // KV geometry for a sequence of this model: window layers (gemma3) get StateKind::kWindow with the
  // model's sliding window (and KvConfig's default margin, max(block_size, window / 4)), so their KV
  // is released once it falls out of reach (docs/sliding-window.md).
  KvConfig MakeKvConfig(KvDtype dtype, int32_t block_size = 32) const;

 private:
  Model() = default;
  Status Bind();
  Status BindLayer(int il, LayerWeights& w);
  Status BindAttention(int il, LayerWeights& w);
  Status BindDeltaNet(int il, LayerWeights& w);
  Status BindMoe(int il, LayerWeights& w);
  // The matmul weights PackWeights considers: every layer matrix and an untied output.
  std::vector<kernels::WeightView*> PackCandidates();

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  const ArchSpec* arch_ = nullptr;
  std::vector<LayerWeights> layers_;
  const GgufTensorInfo* token_embd_ = nullptr;
  const float* output_norm_ = nullptr;
  kernels::WeightView output_;
  bool tied_output_ = false;
  uint64_t weight_bytes_ = 0;
  uint64_t expert_bytes_ = 0;
  kernels::PackedWeights packed_;
};

}  // namespace ember
