#include "model/model.h"

#include <algorithm>
#include <cstring>

#include "format/quant.h"

namespace ember {
namespace {

std::string ShapeStr(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::string ShapeStr(const GgufTensorInfo& t) {
  std::vector<int64_t> ne;
  for (uint32_t i = 0; i < t.n_dims; ++i) ne.push_back(static_cast<int64_t>(t.ne[i]));
  return ShapeStr(ne);
}

// Looks a tensor up and checks its shape (ggml order). Errors name the tensor.
StatusOr<const GgufTensorInfo*> Tensor(const GgufFile& f, const std::string& name,
                                       const std::vector<int64_t>& shape, bool required = true) {
  const GgufTensorInfo* t = f.FindTensor(name);
  if (t == nullptr) {
    if (!required) return static_cast<const GgufTensorInfo*>(nullptr);
    return NotFound("model: tensor '" + name + "' is missing");
  }
  bool ok = true;
  for (size_t i = 0; i < 4; ++i) {
    const int64_t want = i < shape.size() ? shape[i] : 1;
    if (static_cast<int64_t>(t->ne[i]) != want) ok = false;
  }
  if (!ok) {
    return InvalidArgument("model: tensor '" + name + "' has shape " + ShapeStr(*t) + ", expected " +
                           ShapeStr(shape));
  }
  return t;
}

// An f32 vector (norm weight, bias, rope factors).
StatusOr<const float*> F32Vector(const GgufFile& f, const std::string& name, int64_t n, bool required = true) {
  EMBER_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Tensor(f, name, {n}, required));
  if (t == nullptr) return static_cast<const float*>(nullptr);
  if (t->type != GgmlType::F32) {
    return InvalidArgument("model: tensor '" + name + "' has type " + GgmlTypeName(t->type) + ", expected f32");
  }
  return reinterpret_cast<const float*>(t->data);
}

// A 2-D matmul weight mapping n_in -> n_out, in any type the kernels support.
StatusOr<kernels::WeightView> Matrix(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out,
                                     uint64_t* bytes) {
  EMBER_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Tensor(f, name, {n_in, n_out}));
  kernels::WeightView w;
  w.type = t->type;
  w.data = t->data;
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_bytes = TypeInfo(t->type).supported ? RowBytes(t->type, static_cast<uint64_t>(n_in)) : 0;
  Status st = kernels::CheckWeight(w);
  if (!st.ok()) return st.WithContext("model: tensor '" + name + "' (" + GgmlTypeName(t->type) + ")");
  *bytes += t->n_bytes;
  return w;
}

// A 3-D expert tensor [n_in, n_out, n_expert]: expert 0's view (checked like a matrix) and the stride.
StatusOr<ExpertMatrix> Experts(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out,
                               int64_t n_expert, uint64_t* bytes) {
  EMBER_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Tensor(f, name, {n_in, n_out, n_expert}));
  ExpertMatrix m;
  m.first.type = t->type;
  m.first.data = t->data;
  m.first.n_in = n_in;
  m.first.n_out = n_out;
  m.first.row_bytes = TypeInfo(t->type).supported ? RowBytes(t->type, static_cast<uint64_t>(n_in)) : 0;
  Status st = kernels::CheckWeight(m.first);
  if (!st.ok()) return st.WithContext("model: tensor '" + name + "' (" + GgmlTypeName(t->type) + ")");
  m.stride = m.first.row_bytes * static_cast<size_t>(n_out);
  if (t->n_bytes < m.stride * static_cast<uint64_t>(n_expert)) {
    return InvalidArgument("model: tensor '" + name + "' is shorter than its " + std::to_string(n_expert) + " experts");
  }
  *bytes += t->n_bytes;
  return m;
}

std::string Blk(int il, const char* what) { return "blk." + std::to_string(il) + "." + what; }

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromGguf(std::move(file));
}

StatusOr<std::unique_ptr<Model>> Model::FromGguf(std::unique_ptr<GgufFile> file) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  Status st = m->Bind();
  if (!st.ok()) return st.WithContext(m->file_->name());
  return m;
}

Status Model::Bind() {
  const GgufFile& f = *file_;
  EMBER_ASSIGN_OR_RETURN(std::string arch, f.Str("general.architecture"));
  arch_ = FindArch(arch);
  if (arch_ == nullptr) return Unimplemented("model: architecture '" + arch + "' is not supported");
  EMBER_ASSIGN_OR_RETURN(config_, ReadModelConfig(f, arch));
  config_.rope_layout = arch_->rope_layout;
  ModelConfig& c = config_;

  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound("model: tensor 'token_embd.weight' is missing");
  c.n_vocab = static_cast<int64_t>(embd->ne[1]);
  EMBER_ASSIGN_OR_RETURN(token_embd_, Tensor(f, "token_embd.weight", {c.n_embd, c.n_vocab}));
  if (!TypeInfo(embd->type).supported || c.n_embd % TypeInfo(embd->type).block_elems != 0) {
    return InvalidArgument(std::string("model: tensor 'token_embd.weight' has unsupported type ") +
                           GgmlTypeName(embd->type));
  }
  weight_bytes_ = 0;
  expert_bytes_ = 0;
  EMBER_ASSIGN_OR_RETURN(output_norm_, F32Vector(f, "output_norm.weight", c.n_embd));
  tied_output_ = f.FindTensor("output.weight") == nullptr;
  EMBER_ASSIGN_OR_RETURN(output_, Matrix(f, tied_output_ ? "token_embd.weight" : "output.weight", c.n_embd,
                                         c.n_vocab, &weight_bytes_));
  if (arch_->rope_freqs) {
    EMBER_ASSIGN_OR_RETURN(const float* ff, F32Vector(f, "rope_freqs.weight", c.rope_n_dims / 2, false));
    if (ff != nullptr) c.rope_freq_factors.assign(ff, ff + c.rope_n_dims / 2);  // the file's factors win
  } else {
    c.rope_freq_factors.clear();  // llama.cpp applies llama3 factors to the llama family only
  }
  layers_.resize(static_cast<size_t>(c.n_layer));
  for (int il = 0; il < c.n_layer; ++il) EMBER_RETURN_IF_ERROR(BindLayer(il, layers_[static_cast<size_t>(il)]));
  return Status::Ok();
}

Status Model::BindLayer(int il, LayerWeights& w) {
  const GgufFile& f = *file_;
  const ModelConfig& c = config_;
  uint64_t* b = &weight_bytes_;
  EMBER_ASSIGN_OR_RETURN(w.attn_norm, F32Vector(f, Blk(il, "attn_norm.weight"), c.n_embd));
  EMBER_RETURN_IF_ERROR(c.is_recurrent(il) ? BindDeltaNet(il, w) : BindAttention(il, w));
  if (arch_->post_norms) {
    EMBER_ASSIGN_OR_RETURN(w.attn_post_norm, F32Vector(f, Blk(il, "post_attention_norm.weight"), c.n_embd));
    EMBER_ASSIGN_OR_RETURN(w.ffn_post_norm, F32Vector(f, Blk(il, "post_ffw_norm.weight"), c.n_embd));
  }
  EMBER_ASSIGN_OR_RETURN(w.ffn_norm, F32Vector(f, Blk(il, arch_->ffn_norm_name), c.n_embd));
  if (arch_->moe) return BindMoe(il, w);
  EMBER_ASSIGN_OR_RETURN(w.w_gate, Matrix(f, Blk(il, "ffn_gate.weight"), c.n_embd, c.n_ff, b));
  EMBER_ASSIGN_OR_RETURN(w.w_up, Matrix(f, Blk(il, "ffn_up.weight"), c.n_embd, c.n_ff, b));
  EMBER_ASSIGN_OR_RETURN(w.w_down, Matrix(f, Blk(il, "ffn_down.weight"), c.n_ff, c.n_embd, b));
  return Status::Ok();
}

Status Model::BindAttention(int il, LayerWeights& w) {
  const GgufFile& f = *file_;
  const ModelConfig& c = config_;
  uint64_t* b = &weight_bytes_;
  const int64_t q_out = arch_->attn_gate ? 2 * c.q_dim() : c.q_dim();  // qwen35: [q | gate] per head
  EMBER_ASSIGN_OR_RETURN(w.wq, Matrix(f, Blk(il, "attn_q.weight"), c.n_embd, q_out, b));
  EMBER_ASSIGN_OR_RETURN(w.wk, Matrix(f, Blk(il, "attn_k.weight"), c.n_embd, c.kv_dim_k(), b));
  EMBER_ASSIGN_OR_RETURN(w.wv, Matrix(f, Blk(il, "attn_v.weight"), c.n_embd, c.kv_dim_v(), b));
  EMBER_ASSIGN_OR_RETURN(w.wo, Matrix(f, Blk(il, "attn_output.weight"), c.attn_out_dim(), c.n_embd, b));
  if (arch_->qkv_bias) {
    EMBER_ASSIGN_OR_RETURN(w.bq, F32Vector(f, Blk(il, "attn_q.bias"), c.q_dim()));
    EMBER_ASSIGN_OR_RETURN(w.bk, F32Vector(f, Blk(il, "attn_k.bias"), c.kv_dim_k()));
    EMBER_ASSIGN_OR_RETURN(w.bv, F32Vector(f, Blk(il, "attn_v.bias"), c.kv_dim_v()));
  }
  if (arch_->qk_norm) {
    EMBER_ASSIGN_OR_RETURN(w.q_norm, F32Vector(f, Blk(il, "attn_q_norm.weight"), c.head_dim_k));
    EMBER_ASSIGN_OR_RETURN(w.k_norm, F32Vector(f, Blk(il, "attn_k_norm.weight"), c.head_dim_k));
  }
  return Status::Ok();
}

// The tensors llama.cpp 80fb11a requires of a qwen35 linear-attention layer (src/models/qwen35.cpp).
Status Model::BindDeltaNet(int il, LayerWeights& w) {
  const GgufFile& f = *file_;
  const ModelConfig& c = config_;
  uint64_t* b = &weight_bytes_;
  const int64_t channels = c.ssm_conv_channels();
  EMBER_ASSIGN_OR_RETURN(w.ssm_qkv, Matrix(f, Blk(il, "attn_qkv.weight"), c.n_embd, channels, b));
  EMBER_ASSIGN_OR_RETURN(w.ssm_z, Matrix(f, Blk(il, "attn_gate.weight"), c.n_embd, c.ssm_d_inner, b));
  EMBER_ASSIGN_OR_RETURN(w.ssm_beta, Matrix(f, Blk(il, "ssm_beta.weight"), c.n_embd, c.ssm_dt_rank, b));
  EMBER_ASSIGN_OR_RETURN(w.ssm_alpha, Matrix(f, Blk(il, "ssm_alpha.weight"), c.n_embd, c.ssm_dt_rank, b));
  EMBER_ASSIGN_OR_RETURN(w.ssm_out, Matrix(f, Blk(il, "ssm_out.weight"), c.ssm_d_inner, c.n_embd, b));
  {
    const std::string name = Blk(il, "ssm_conv1d.weight");
    EMBER_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Tensor(f, name, {c.ssm_d_conv, channels}));
    if (t->type != GgmlType::F32) {
      return InvalidArgument("model: tensor '" + name + "' has type " + GgmlTypeName(t->type) + ", expected f32");
    }
    w.ssm_conv1d = reinterpret_cast<const float*>(t->data);
    *b += t->n_bytes;
  }
  EMBER_ASSIGN_OR_RETURN(w.ssm_dt, F32Vector(f, Blk(il, "ssm_dt.bias"), c.ssm_dt_rank));
  EMBER_ASSIGN_OR_RETURN(w.ssm_a, F32Vector(f, Blk(il, "ssm_a"), c.ssm_dt_rank));
  EMBER_ASSIGN_OR_RETURN(w.ssm_norm, F32Vector(f, Blk(il, "ssm_norm.weight"), c.ssm_d_state));
  return Status::Ok();
}

// The tensors llama.cpp 80fb11a requires of a qwen3moe or qwen35moe FFN (src/models/qwen3moe.cpp,
// qwen35moe.cpp): the router, the experts (qwen35moe files may merge gate and up into one
// ffn_gate_up_exps [n_embd, 2 * n_ff_exp, n_expert]: each expert's gate rows, then its up rows) and
// qwen35moe's shared expert.
Status Model::BindMoe(int il, LayerWeights& w) {
  const GgufFile& f = *file_;
  const ModelConfig& c = config_;
  uint64_t* b = &weight_bytes_;
  EMBER_ASSIGN_OR_RETURN(w.moe_router, Matrix(f, Blk(il, "ffn_gate_inp.weight"), c.n_embd, c.n_expert, b));
  const uint64_t before = weight_bytes_;
  if (arch_->moe_shared_expert && f.FindTensor(Blk(il, "ffn_gate_up_exps.weight")) != nullptr) {
    EMBER_ASSIGN_OR_RETURN(ExpertMatrix both, Experts(f, Blk(il, "ffn_gate_up_exps.weight"), c.n_embd, 2 * c.n_ff_exp,
                                                      c.n_expert, b));
    w.exp_gate = w.exp_up = both;
    w.exp_gate.first.n_out = w.exp_up.first.n_out = c.n_ff_exp;
    w.exp_up.first.data += static_cast<size_t>(c.n_ff_exp) * both.first.row_bytes;
  } else {
    EMBER_ASSIGN_OR_RETURN(w.exp_gate, Experts(f, Blk(il, "ffn_gate_exps.weight"), c.n_embd, c.n_ff_exp, c.n_expert, b));
    EMBER_ASSIGN_OR_RETURN(w.exp_up, Experts(f, Blk(il, "ffn_up_exps.weight"), c.n_embd, c.n_ff_exp, c.n_expert, b));
  }
  EMBER_ASSIGN_OR_RETURN(w.exp_down, Experts(f, Blk(il, "ffn_down_exps.weight"), c.n_ff_exp, c.n_embd, c.n_expert, b));
  const uint64_t experts = weight_bytes_ - before;
  expert_bytes_ += experts;
  if (!arch_->moe_shared_expert) return Status::Ok();
  {  // [n_embd]: one gate logit per row, read as a one-row matrix
    EMBER_ASSIGN_OR_RETURN(const float* g, F32Vector(f, Blk(il, "ffn_gate_inp_shexp.weight"), c.n_embd));
    w.shexp_inp = kernels::WeightView{GgmlType::F32, reinterpret_cast<const uint8_t*>(g), c.n_embd, 1,
                                      static_cast<size_t>(c.n_embd) * sizeof(float)};
    *b += static_cast<uint64_t>(c.n_embd) * sizeof(float);
  }
  EMBER_ASSIGN_OR_RETURN(w.shexp_gate, Matrix(f, Blk(il, "ffn_gate_shexp.weight"), c.n_embd, c.n_ff_shexp, b));
  EMBER_ASSIGN_OR_RETURN(w.shexp_up, Matrix(f, Blk(il, "ffn_up_shexp.weight"), c.n_embd, c.n_ff_shexp, b));
  EMBER_ASSIGN_OR_RETURN(w.shexp_down, Matrix(f, Blk(il, "ffn_down_shexp.weight"), c.n_ff_shexp, c.n_embd, b));
  return Status::Ok();
}

std::vector<kernels::WeightView*> Model::PackCandidates() {
  std::vector<kernels::WeightView*> views;
  for (LayerWeights& l : layers_) {
    for (kernels::WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.ssm_qkv, &l.ssm_z,
                                   &l.ssm_beta, &l.ssm_alpha, &l.ssm_out, &l.moe_router, &l.shexp_gate,
                                   &l.shexp_up, &l.shexp_down}) {
      if (w->data != nullptr) views.push_back(w);  // a hybrid's layers have one set or the other
    }
  }
  // A tied output is token_embd, whose rows the embedding lookup reads in their own layout anyway: a
  // copy would add to memory instead of replacing pages.
  if (!tied_output_) views.push_back(&output_);
  return views;
}

Status Model::PackWeights(kernels::ThreadPool& pool,
                          const std::function<void(const kernels::WeightView&)>& packed_one) {
  EMBER_ASSIGN_OR_RETURN(packed_, kernels::PackedWeights::Pack(PackCandidates(), pool, packed_one));
  return Status::Ok();
}

uint64_t Model::PackableBytes(int* tensors) const {
  const std::vector<std::pair<const uint8_t*, uint64_t>> sources = PackableSources();
  uint64_t bytes = 0;
  for (const auto& source : sources) bytes += source.second;
  if (tensors != nullptr) *tensors = static_cast<int>(sources.size());
  return bytes;
}

std::vector<std::pair<const uint8_t*, uint64_t>> Model::PackableSources() const {
  std::vector<std::pair<const uint8_t*, uint64_t>> out;
  for (const kernels::WeightView* w : const_cast<Model*>(this)->PackCandidates()) {
    // A copy is a permutation of its rows' bytes (kernels/repack.h): as long as the rows it replaces.
    if (const uint64_t b = kernels::PackedCopyBytes(*w); b > 0) out.emplace_back(w->data, b);
  }
  std::sort(out.begin(), out.end());
  return out;
}

KvConfig Model::MakeKvConfig(KvDtype dtype, int32_t block_size) const {
  KvConfig k;
  k.n_layer = static_cast<int32_t>(config_.n_layer);
  k.n_kv_head = static_cast<int32_t>(config_.n_head_kv);
  k.head_dim_k = static_cast<int32_t>(config_.head_dim_k);
  k.head_dim_v = static_cast<int32_t>(config_.head_dim_v);
  k.dtype = dtype;
  k.block_size = block_size;
  if (config_.hybrid()) {
    k.kinds.resize(static_cast<size_t>(config_.n_layer));
    for (int64_t il = 0; il < config_.n_layer; ++il) {
      if (config_.is_recurrent(il)) {
        LayerStateSpec& spec = k.kinds[static_cast<size_t>(il)];
        spec.kind = StateKind::kRecurrent;
        spec.state_floats = config_.ssm_state_floats();
      }
    }
  }
  if (config_.n_swa > 0) {
    k.kinds.resize(static_cast<size_t>(config_.n_layer));
    for (int64_t il = 0; il < config_.n_layer; ++il) {
      if (config_.is_swa(il)) k.kinds[static_cast<size_t>(il)] = {StateKind::kWindow, static_cast<int32_t>(config_.n_swa)};
    }
  }
  return k;
}

}  // namespace ember
