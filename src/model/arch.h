// What differs between the Llama-family architectures, one small file per architecture
// (arch_llama.cc, arch_qwen2.cc, arch_qwen3.cc, arch_gemma3.cc): the tensors they carry and how the
// attention block turns its normalised input into roped Q, K and V. Everything else is the shared
// forward pass, which reads the few structural switches below (Gemma's post-norms and GELU) and the
// model config's numeric ones (embedding scale, window layers, logit soft-cap).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/ops.h"
#include "kernels/thread_pool.h"
#include "model/op_times.h"

namespace ember {

struct ModelConfig;
struct LayerWeights;

// Inputs and outputs of the Q/K/V step of one layer for a ubatch of n_tok tokens.
struct QkvStep {
  const ModelConfig& cfg;
  const LayerWeights& w;
  kernels::ThreadPool& pool;
  OpTimes* times;
  const float* xn;          // [n_tok][n_embd]    attention-normed input
  int64_t n_tok;
  const int64_t* pos;       // [n_tok] each token's position in its sequence
  const float* rope_cache;  // [n_tok][rope_n_dims] cos/sin per position for this layer's RoPE base
  float* q;                 // [n_tok][n_head * head_dim_k]     out
  float* k;                 // [n_tok][n_head_kv * head_dim_k]  out
  float* v;                 // [n_tok][n_head_kv * head_dim_v]  out
  // Archs with an attention output gate (ArchSpec::attn_gate, qwen35): wq yields [q | gate] per head.
  float* qg = nullptr;      // [n_tok][2 * n_head * head_dim_k]  scratch for that joint projection
  float* gate = nullptr;    // [n_tok][n_head * head_dim_k]      out: the gate, before its sigmoid
};

using QkvFn = void (*)(const QkvStep& step);

enum class FfnAct : uint8_t {
  kSilu,  // gate = silu(gate) * up (llama, qwen)
  kGelu,  // gate = gelu_tanh(gate) * up through ggml's fp16 table (gemma; kernels/gelu.h)
};

struct ArchSpec {
  const char* name;              // general.architecture
  kernels::RopeLayout rope_layout;
  bool qkv_bias;                 // blk.N.attn_{q,k,v}.bias required (qwen2)
  bool qk_norm;                  // blk.N.attn_{q,k}_norm.weight required (qwen3)
  bool rope_freqs;               // honours rope_freqs.weight / llama3 rope scaling (llama)
  QkvFn qkv;
  bool post_norms = false;       // blk.N.post_attention_norm / post_ffw_norm after attention and FFN (gemma)
  FfnAct ffn_act = FfnAct::kSilu;
  // qwen35: attn_q yields a per-head output gate beside q (attention output *= sigmoid(gate)); some
  // layers are gated-delta-net layers (ModelConfig::recurrent_layers, model/delta_net.h); the FFN's
  // input norm is stored as post_attention_norm.
  bool attn_gate = false;
  bool hybrid = false;
  // qwen3moe: the FFN is a routed mixture of experts (ffn_gate_inp + ffn_{gate,up,down}_exps;
  // model/moe.h) instead of ffn_{gate,up,down}.
  bool moe = false;
  // qwen35moe: a shared expert (ffn_{gate,up,down}_shexp) runs on every row beside the routed ones, its
  // output scaled by sigmoid(x · ffn_gate_inp_shexp).
  bool moe_shared_expert = false;
  const char* ffn_norm_name = "ffn_norm.weight";
};

// nullptr for an architecture ember does not implement.
const ArchSpec* FindArch(const std::string& name);

// ---- Shared pieces the per-arch QkvFns are built from (layer_ops.cc) ----
// q/k/v = xn · W{q,k,v}ᵀ (+ bias when the layer has one).
void ProjectQkv(const QkvStep& s);
// RMS-normalises each head_dim slice of x [n_tok][n_heads * head_dim] with weight w (qwen3 q/k norm).
void NormHeads(const QkvStep& s, float* x, int64_t n_heads, const float* w);
// RoPE parameters of the model (layout, dims, base, scaling, llama3 freq factors).
kernels::RopeParams RopeParamsOf(const ModelConfig& c);
// RoPE parameters of the model's window layers (rope.freq_base_swa, no scaling, no freq factors).
kernels::RopeParams RopeParamsSwaOf(const ModelConfig& c);
// Rotates every head of x [n_tok][n_heads * head_dim_k] at its token's position.
void RopeHeads(const QkvStep& s, float* x, int64_t n_heads);
// x[t] *= scale for every element of n_heads heads (gemma's query scaling).
void ScaleHeads(const QkvStep& s, float* x, int64_t n_heads, float scale);

}  // namespace ember
