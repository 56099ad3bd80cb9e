#include "model/model_config.h"

#include <algorithm>
#include <cmath>

#include "format/gguf.h"
#include "format/hparam_limits.h"

namespace ember {
namespace {

// A required integer key in 1..max (errors name the key: wrong type, missing, or out of range).
StatusOr<int64_t> Required(const GgufFile& f, const std::string& key, int64_t max) {
  EMBER_ASSIGN_OR_RETURN(int64_t v, f.Int(key));
  EMBER_RETURN_IF_ERROR(hparams::CheckRange(key, v, 1, max));
  return v;
}

// An optional integer key in 1..max, `fallback` when absent.
StatusOr<int64_t> Optional(const GgufFile& f, const std::string& key, int64_t fallback, int64_t max) {
  EMBER_ASSIGN_OR_RETURN(int64_t v, f.IntOr(key, fallback));
  EMBER_RETURN_IF_ERROR(hparams::CheckRange(key, v, 1, max));
  return v;
}

// rope.scaling.*: "none"/absent, "linear" (freq_scale), "llama3" (freq factors); anything else is refused.
Status ReadRopeScaling(const GgufFile& f, const std::string& a, ModelConfig& c) {
  EMBER_ASSIGN_OR_RETURN(std::string type, f.StrOr(a + ".rope.scaling.type", "none"));
  if (type == "none") return Status::Ok();
  EMBER_ASSIGN_OR_RETURN(double factor, f.FloatOr(a + ".rope.scaling.factor", 1.0));
  if (factor <= 0) return InvalidArgument("model key '" + a + ".rope.scaling.factor' must be positive");
  if (type == "linear") {
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
    return Status::Ok();
  }
  if (type == "llama3") {
    EMBER_ASSIGN_OR_RETURN(double low, f.FloatOr(a + ".rope.scaling.low_freq_factor", 1.0));
    EMBER_ASSIGN_OR_RETURN(double high, f.FloatOr(a + ".rope.scaling.high_freq_factor", 4.0));
    EMBER_ASSIGN_OR_RETURN(int64_t orig, f.IntOr(a + ".rope.scaling.original_context_length", 8192));
    if (low == high) return InvalidArgument("model: llama3 rope scaling needs low_freq_factor != high_freq_factor");
    // Metadata fallback; the loader prefers a rope_freqs.weight tensor when the file has one.
    c.rope_freq_factors = Llama3FreqFactors(c.rope_freq_base, c.rope_n_dims, static_cast<float>(factor),
                                            static_cast<float>(low), static_cast<float>(high),
                                            static_cast<float>(orig));
    return Status::Ok();
  }
  return Unimplemented("model: rope scaling type '" + type + "' is not supported");
}

// gemma3, as llama.cpp 80fb11a reads it (src/models/gemma3.cpp):
//  * attention.sliding_window > 0 turns the window on; sliding_window_pattern (a scalar period, default
//    6; an array is ignored there, so here too) makes layer il global iff il % period == period - 1
//    (period 0: every layer is a window layer);
//  * window layers rope with rope.freq_base_swa (default 10000) and no scaling; global layers with
//    rope.freq_base and rope.scaling;
//  * q is scaled by 1/sqrt(head_dim) before QK (the 62-layer 27B uses 1/sqrt(n_embd / n_head)); the
//    token embeddings by sqrt(n_embd); final_logit_softcapping (absent: 0, none) caps the logits.
Status ReadGemma3(const GgufFile& f, const std::string& a, ModelConfig& c) {
  EMBER_ASSIGN_OR_RETURN(c.n_swa, f.IntOr(a + ".attention.sliding_window", 0));
  EMBER_RETURN_IF_ERROR(hparams::CheckRange(a + ".attention.sliding_window", c.n_swa, 0, hparams::kMaxContext));
  if (c.n_swa > 0) {
    int64_t period = 6;
    const std::string pkey = a + ".attention.sliding_window_pattern";
    const GgufValue* pv = f.Find(pkey);
    if (pv != nullptr && pv->type != GgufType::kArray) {
      EMBER_ASSIGN_OR_RETURN(period, f.Int(pkey));
      if (period < 0) return InvalidArgument("model key '" + pkey + "' must not be negative");
    }
    c.swa_layers.resize(static_cast<size_t>(c.n_layer));
    for (int64_t il = 0; il < c.n_layer; ++il) c.swa_layers[il] = period == 0 || il % period < period - 1;
    EMBER_ASSIGN_OR_RETURN(double base_swa, f.FloatOr(a + ".rope.freq_base_swa", 10000.0));
    c.rope_freq_base_swa = static_cast<float>(base_swa);
  }
  c.attn_scale = c.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head))
                                 : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  EMBER_ASSIGN_OR_RETURN(double cap, f.FloatOr(a + ".final_logit_softcapping", 0.0));
  c.final_logit_softcap = static_cast<float>(cap);
  return Status::Ok();
}

// qwen35, as llama.cpp 80fb11a reads it (src/models/qwen35.cpp): the ssm.* sizes of the gated delta
// net, and which layers are linear attention — attention.recurrent_layers (a bool/int array) when
// present, else every layer but each full_attention_interval-th (default 4). rope.dimension_sections
// only matters for images: text positions are the same in every section, which makes the interleaved
// multi-section RoPE the NeoX rotation of the first rope.dimension_count dims.
Status ReadQwen35(const GgufFile& f, const std::string& a, ModelConfig& c) {
  constexpr int64_t kMaxSsm = int64_t{1} << 16;
  EMBER_ASSIGN_OR_RETURN(c.ssm_d_conv, Required(f, a + ".ssm.conv_kernel", 64));
  EMBER_ASSIGN_OR_RETURN(c.ssm_d_state, Required(f, a + ".ssm.state_size", 1024));
  EMBER_ASSIGN_OR_RETURN(c.ssm_n_group, Required(f, a + ".ssm.group_count", kMaxSsm));
  EMBER_ASSIGN_OR_RETURN(c.ssm_dt_rank, Required(f, a + ".ssm.time_step_rank", kMaxSsm));
  EMBER_ASSIGN_OR_RETURN(c.ssm_d_inner, Required(f, a + ".ssm.inner_size", hparams::kMaxWidth));
  if (c.ssm_d_conv < 2) return InvalidArgument("model key '" + a + ".ssm.conv_kernel' must be at least 2");
  if (c.ssm_d_inner != c.ssm_dt_rank * c.ssm_d_state) {
    return InvalidArgument("model: ssm.inner_size (" + std::to_string(c.ssm_d_inner) +
                           ") must be ssm.time_step_rank x ssm.state_size (" + std::to_string(c.ssm_dt_rank) + " x " +
                           std::to_string(c.ssm_d_state) + ")");
  }
  if (c.ssm_dt_rank % c.ssm_n_group != 0) {
    return InvalidArgument("model: ssm.time_step_rank (" + std::to_string(c.ssm_dt_rank) +
                           ") must be a multiple of ssm.group_count (" + std::to_string(c.ssm_n_group) + ")");
  }
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), false);
  const std::string rkey = a + ".attention.recurrent_layers";
  if (f.Find(rkey) != nullptr) {
    EMBER_ASSIGN_OR_RETURN(std::vector<int64_t> flags, f.IntArray(rkey));
    if (static_cast<int64_t>(flags.size()) < c.n_layer) {
      return InvalidArgument("model key '" + rkey + "' has " + std::to_string(flags.size()) + " entries for " +
                             std::to_string(c.n_layer) + " layers");
    }
    for (int64_t il = 0; il < c.n_layer; ++il) c.recurrent_layers[static_cast<size_t>(il)] = flags[static_cast<size_t>(il)] != 0;
  } else {
    EMBER_ASSIGN_OR_RETURN(int64_t interval, Optional(f, a + ".full_attention_interval", 4, hparams::kMaxLayers));
    for (int64_t il = 0; il < c.n_layer; ++il) c.recurrent_layers[static_cast<size_t>(il)] = (il + 1) % interval != 0;
  }
  return Status::Ok();
}

// qwen3moe and qwen35moe, as llama.cpp 80fb11a reads them (src/models/qwen3moe.cpp, qwen35moe.cpp,
// build_moe_ffn): expert_count and
// expert_used_count are required, expert_feed_forward_length defaults to feed_forward_length /
// expert_used_count; routing is a softmax over all experts, the top k are kept and their weights divided
// by their sum (no expert_weights_scale). qwen35moe adds a shared expert
// (expert_shared_feed_forward_length, default feed_forward_length).
Status ReadMoe(const GgufFile& f, const std::string& a, ModelConfig& c) {
  constexpr int64_t kMaxExperts = 512;  // the largest routed MoE files ship 384
  EMBER_ASSIGN_OR_RETURN(c.n_expert, Required(f, a + ".expert_count", kMaxExperts));
  EMBER_ASSIGN_OR_RETURN(c.n_expert_used, Required(f, a + ".expert_used_count", c.n_expert));
  EMBER_ASSIGN_OR_RETURN(c.n_ff_exp, Optional(f, a + ".expert_feed_forward_length",
                                              std::max<int64_t>(1, c.n_ff / c.n_expert_used), hparams::kMaxWidth));
  if (a == "qwen35moe") {  // a shared expert beside the routed ones, feed_forward_length wide by default
    EMBER_ASSIGN_OR_RETURN(c.n_ff_shexp, Optional(f, a + ".expert_shared_feed_forward_length", c.n_ff, hparams::kMaxWidth));
  }
  return Status::Ok();
}

}  // namespace

std::vector<float> Llama3FreqFactors(float freq_base, int64_t n_dims, float factor, float low_freq_factor,
                                     float high_freq_factor, float original_context_length) {
  const double kPi = 3.14159265358979323846;
  const double low_wavelen = original_context_length / low_freq_factor;
  const double high_wavelen = original_context_length / high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < n_dims; i += 2) {
    const float freq = 1.0f / std::pow(freq_base, static_cast<float>(i) / static_cast<float>(n_dims));
    const double wavelen = 2 * kPi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const double smooth = (original_context_length / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      out.push_back(static_cast<float>(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

StatusOr<ModelConfig> ReadModelConfig(const GgufFile& f, const std::string& a) {
  ModelConfig c;
  c.arch = a;
  // Every size is bounded before anything is allocated from it (layers, rope factors, swa flags).
  EMBER_ASSIGN_OR_RETURN(c.n_embd, Required(f, a + ".embedding_length", hparams::kMaxWidth));
  EMBER_ASSIGN_OR_RETURN(c.n_layer, Required(f, a + ".block_count", hparams::kMaxLayers));
  // Multi-token-prediction blocks (Qwen3.5's MTP, GLM's nextn) come after the trunk and are counted in
  // block_count; the forward pass never runs them, so they are not read (llama.cpp: n_layer()).
  EMBER_ASSIGN_OR_RETURN(c.n_mtp_layers, f.IntOr(a + ".nextn_predict_layers", 0));
  EMBER_RETURN_IF_ERROR(hparams::CheckRange(a + ".nextn_predict_layers", c.n_mtp_layers, 0, c.n_layer - 1));
  c.n_layer -= c.n_mtp_layers;
  EMBER_ASSIGN_OR_RETURN(c.n_head, Required(f, a + ".attention.head_count", hparams::kMaxHeads));
  EMBER_ASSIGN_OR_RETURN(c.n_head_kv, Optional(f, a + ".attention.head_count_kv", c.n_head, hparams::kMaxHeads));
  EMBER_ASSIGN_OR_RETURN(c.n_ff, Required(f, a + ".feed_forward_length", hparams::kMaxWidth));
  EMBER_ASSIGN_OR_RETURN(c.n_ctx_train, Optional(f, a + ".context_length", 4096, hparams::kMaxContext));
  const int64_t default_head_dim = std::max<int64_t>(1, c.n_embd / c.n_head);
  EMBER_ASSIGN_OR_RETURN(c.head_dim_k, Optional(f, a + ".attention.key_length", default_head_dim, hparams::kMaxHeadDim));
  EMBER_ASSIGN_OR_RETURN(c.head_dim_v, Optional(f, a + ".attention.value_length", c.head_dim_k, hparams::kMaxHeadDim));
  EMBER_ASSIGN_OR_RETURN(double eps, f.FloatOr(a + ".attention.layer_norm_rms_epsilon", 1e-5));
  c.rms_eps = static_cast<float>(eps);
  EMBER_ASSIGN_OR_RETURN(double base, f.FloatOr(a + ".rope.freq_base", 10000.0));
  c.rope_freq_base = static_cast<float>(base);
  EMBER_ASSIGN_OR_RETURN(c.rope_n_dims, f.IntOr(a + ".rope.dimension_count", c.head_dim_k));

  if (c.n_head % c.n_head_kv != 0) {
    return InvalidArgument("model: attention.head_count (" + std::to_string(c.n_head) +
                           ") must be a positive multiple of attention.head_count_kv (" +
                           std::to_string(c.n_head_kv) + ")");
  }
  if (c.rope_n_dims <= 0 || c.rope_n_dims > c.head_dim_k || c.rope_n_dims % 2 != 0) {
    return InvalidArgument("model: rope.dimension_count " + std::to_string(c.rope_n_dims) +
                           " must be even and at most key_length " + std::to_string(c.head_dim_k));
  }
  EMBER_RETURN_IF_ERROR(ReadRopeScaling(f, a, c));
  if (a == "gemma3") EMBER_RETURN_IF_ERROR(ReadGemma3(f, a, c));
  if (a == "qwen35" || a == "qwen35moe") EMBER_RETURN_IF_ERROR(ReadQwen35(f, a, c));
  if (a == "qwen3moe" || a == "qwen35moe") EMBER_RETURN_IF_ERROR(ReadMoe(f, a, c));
  return c;
}

}  // namespace ember
