// Hyperparameters of a Llama-family model, read from GGUF metadata (`{arch}.*` keys).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "util/status.h"

namespace ember {

class GgufFile;

struct ModelConfig {
  std::string arch;          // general.architecture: "llama" | "qwen2" | "qwen3" | "gemma3" | "qwen35" | "qwen3moe" | "qwen35moe"
  int64_t n_vocab = 0;       // rows of token_embd.weight
  int64_t n_embd = 0;
  int64_t n_layer = 0;         // trunk blocks: block_count less the MTP blocks
  int64_t n_mtp_layers = 0;    // nextn_predict_layers: MTP blocks after the trunk, loaded by name only
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim_k = 0;    // attention.key_length (default n_embd / n_head)
  int64_t head_dim_v = 0;    // attention.value_length (default head_dim_k)
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;   // context_length
  float rms_eps = 1e-5f;
  // RoPE: layout from the architecture; n_dims = rope.dimension_count (default head_dim_k).
  kernels::RopeLayout rope_layout = kernels::RopeLayout::kNorm;
  int64_t rope_n_dims = 0;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;       // 1 / rope.scaling.factor for "linear" scaling
  std::vector<float> rope_freq_factors;  // llama3 scaling: n_dims/2 divisors (empty: none)

  // Sliding-window attention (gemma3). n_swa = 0: every layer attends to all earlier positions.
  // A query at position p on a window layer sees keys (p - n_swa, p] (llama.cpp's LLAMA_SWA_TYPE_STANDARD).
  int64_t n_swa = 0;                  // attention.sliding_window
  std::vector<bool> swa_layers;       // per layer: true = window layer (empty when n_swa == 0)
  float rope_freq_base_swa = 10000.0f;  // rope.freq_base_swa: window layers' RoPE base (no scaling)
  // Gemma numerics (defaults leave llama/qwen unchanged).
  float attn_scale = 0;               // > 0: q *= attn_scale before QK (and no 1/sqrt(d) after)
  float embd_scale = 1.0f;            // token embeddings *= embd_scale (gemma: sqrt(n_embd))
  float final_logit_softcap = 0;      // > 0: logits = cap * tanh(logits / cap)

  // Gated delta net (qwen35 hybrids, docs/hybrid.md). recurrent_layers empty: every layer is attention.
  std::vector<bool> recurrent_layers;  // per layer: true = linear-attention (delta net) layer
  int64_t ssm_d_conv = 0;              // ssm.conv_kernel: causal conv1d taps
  int64_t ssm_d_state = 0;             // ssm.state_size: head dim of the delta net's q, k and v
  int64_t ssm_n_group = 0;             // ssm.group_count: q/k heads
  int64_t ssm_dt_rank = 0;             // ssm.time_step_rank: v heads (each has its own decay and beta)
  int64_t ssm_d_inner = 0;             // ssm.inner_size = ssm_dt_rank * ssm_d_state (value width)

  // Mixture of experts (qwen3moe, docs/moe.md). n_expert = 0: a dense FFN.
  int64_t n_expert = 0;                // expert_count
  int64_t n_expert_used = 0;           // expert_used_count: experts each token is routed to (top-k)
  int64_t n_ff_exp = 0;                // expert_feed_forward_length (default n_ff / n_expert_used)
  int64_t n_ff_shexp = 0;              // qwen35moe: the shared expert's FFN width (0: no shared expert)

  bool moe() const { return n_expert > 0; }
  bool is_recurrent(int64_t il) const { return !recurrent_layers.empty() && recurrent_layers[static_cast<size_t>(il)]; }
  bool hybrid() const { return !recurrent_layers.empty(); }
  int64_t ssm_key_dim() const { return ssm_n_group * ssm_d_state; }
  // Channels of the conv1d (and of the attn_qkv projection): q, k, then v.
  int64_t ssm_conv_channels() const { return 2 * ssm_key_dim() + ssm_d_inner; }
  // Floats of one delta-net layer's recurrent state: the conv window, then one S x S matrix per v head.
  int64_t ssm_conv_state_floats() const { return (ssm_d_conv - 1) * ssm_conv_channels(); }
  int64_t ssm_state_floats() const { return ssm_conv_state_floats() + ssm_dt_rank * ssm_d_state * ssm_d_state; }

  bool is_swa(int64_t il) const { return n_swa > 0 && swa_layers[static_cast<size_t>(il)]; }
  int64_t q_dim() const { return n_head * head_dim_k; }
  int64_t kv_dim_k() const { return n_head_kv * head_dim_k; }
  int64_t kv_dim_v() const { return n_head_kv * head_dim_v; }
  int64_t attn_out_dim() const { return n_head * head_dim_v; }
};

// Reads the `{arch}.*` hyperparameters (errors name the key); the caller fills n_vocab, rope_layout and
// the freq factors from the tensors and the architecture.
StatusOr<ModelConfig> ReadModelConfig(const GgufFile& file, const std::string& arch);

// llama3 rope scaling computed from metadata (factor, low/high_freq_factor, original_context_length),
// the divisors convert_hf_to_gguf.py writes into rope_freqs.weight. Used when that tensor is absent.
std::vector<float> Llama3FreqFactors(float freq_base, int64_t n_dims, float factor, float low_freq_factor,
                                     float high_freq_factor, float original_context_length);

}  // namespace ember
