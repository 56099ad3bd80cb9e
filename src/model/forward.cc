#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "format/quant.h"
#include "kernels/gelu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "util/half.h"

namespace ember {

ForwardContext::ForwardContext(const Model& model, const ForwardOptions& options)
    : model_(model), opts_(options) {
  const ModelConfig& c = model.config();
  if (opts_.max_ctx <= 0) opts_.max_ctx = c.n_ctx_train;
  opts_.max_ubatch = std::max<int64_t>(1, opts_.max_ubatch);
  const size_t T = static_cast<size_t>(opts_.max_ubatch);
  x_.resize(T * c.n_embd);
  xn_.resize(T * c.n_embd);
  q_.resize(T * c.q_dim());
  k_.resize(T * c.kv_dim_k());
  v_.resize(T * c.kv_dim_v());
  att_.resize(T * c.attn_out_dim());
  proj_.resize(T * c.n_embd);
  if (c.moe()) {
    moe_.Resize(c, opts_.max_ubatch);
  } else {
    gate_.resize(T * c.n_ff);
    up_.resize(T * c.n_ff);
  }
  rope_.resize(T * c.rope_n_dims);
  if (c.n_swa > 0) rope_swa_.resize(T * c.rope_n_dims);
  if (model.arch().attn_gate) {
    qg_.resize(T * 2 * c.q_dim());
    att_gate_.resize(T * c.q_dim());
  }
  if (c.hybrid()) delta_.Resize(c, opts_.max_ubatch);
  opts_.max_logit_rows = std::max<int64_t>(1, std::min(opts_.max_logit_rows, opts_.max_ubatch));
  logits_.resize(static_cast<size_t>(opts_.all_logits ? opts_.max_ubatch : opts_.max_logit_rows) * c.n_vocab);
  pos_.resize(T);
  // scores_ and half_ grow in Attention to what the context in use needs (not max_ctx up front).
}

Status ForwardContext::Run(KvState& kv, const int32_t* tokens, int64_t n, LogitsMode mode,
                           kernels::ThreadPool& pool) {
  if (n < 1 || n > opts_.max_ubatch) {
    return InvalidArgument("forward: " + std::to_string(n) + " tokens (ubatch holds 1.." +
                           std::to_string(opts_.max_ubatch) + ")");
  }
  const ForwardSlice slice{&kv, tokens, n, mode};
  std::vector<Status> status;
  EMBER_RETURN_IF_ERROR(RunBatch(std::span<const ForwardSlice>(&slice, 1), pool, &status));
  return status[0];
}

// Reads top to bottom like the model: embeddings, n_layer blocks, final norm, output projection. Rows
// of all slices go through every matmul together; only RoPE positions, the K/V stores and attention
// look at which sequence a row belongs to.
Status ForwardContext::RunBatch(std::span<const ForwardSlice> slices, kernels::ThreadPool& pool,
                                std::vector<Status>* status) {
  const ModelConfig& c = model_.config();
  if (slices.empty()) return InvalidArgument("forward: no slices");
  int64_t rows = 0, logit_rows = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const ForwardSlice& s = slices[i];
    if (s.kv == nullptr || s.n < 1) return InvalidArgument("forward: slice " + std::to_string(i) + " is empty");
    for (size_t j = 0; j < i; ++j) {
      if (slices[j].kv == s.kv) return InvalidArgument("forward: one KV state in two slices");
    }
    rows += s.n;
    logit_rows += s.mode == LogitsMode::kAll ? s.n : s.mode == LogitsMode::kLast ? 1 : 0;
  }
  if (rows > opts_.max_ubatch) {
    return InvalidArgument("forward: " + std::to_string(rows) + " tokens (ubatch holds 1.." +
                           std::to_string(opts_.max_ubatch) + ")");
  }
  const int64_t logit_cap = opts_.all_logits ? opts_.max_ubatch : opts_.max_logit_rows;
  if (logit_rows > logit_cap) {
    return InvalidArgument("forward: " + std::to_string(logit_rows) + " logit rows (room for " +
                           std::to_string(logit_cap) + ")");
  }
  // Per slice: what would make it fail is checked before anything is written, so a bad slice leaves
  // its KV untouched and costs the others nothing.
  status->assign(slices.size(), Status::Ok());
  slice_logit_row_.assign(slices.size(), -1);
  std::vector<Live>& live = live_;
  live.clear();
  int64_t row = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const ForwardSlice& s = slices[i];
    const int64_t pos0 = s.kv->n_pos();
    Status st = Status::Ok();
    if (pos0 + s.n > opts_.max_ctx) {
      st = ResourceExhausted("forward: context full (" + std::to_string(pos0 + s.n) + " > " +
                             std::to_string(opts_.max_ctx) + " positions)");
    }
    for (int64_t t = 0; st.ok() && t < s.n; ++t) {
      if (s.tokens[t] < 0 || s.tokens[t] >= c.n_vocab) {
        st = InvalidArgument("forward: token id " + std::to_string(s.tokens[t]) + " out of range [0, " +
                             std::to_string(c.n_vocab) + ")");
      }
    }
    if (st.ok()) st = s.kv->Reserve(s.n);
    if (!st.ok()) {
      (*status)[i] = std::move(st);
      continue;
    }
    live.push_back({s.kv, row, s.n, pos0, s.tokens, s.mode, i});
    for (int64_t t = 0; t < s.n; ++t) pos_[static_cast<size_t>(row + t)] = pos0 + t;
    row += s.n;
  }
  if (live.empty()) return Status::Ok();
  const int64_t n = row;  // rows that run
  for (const Live& l : live) Embed(l.tokens, l.row0, l.n, pool);  // x [T][n_embd]
  {
    OpTimer timer(&times_, &times_.rope_s);
    const kernels::RopeParams rp = RopeParamsOf(c);
    for (int64_t t = 0; t < n; ++t) kernels::RopeCache(rp, pos_[static_cast<size_t>(t)], rope_.data() + t * c.rope_n_dims);
    if (c.n_swa > 0) {
      const kernels::RopeParams rs = RopeParamsSwaOf(c);
      for (int64_t t = 0; t < n; ++t) {
        kernels::RopeCache(rs, pos_[static_cast<size_t>(t)], rope_swa_.data() + t * c.rope_n_dims);
      }
    }
  }
  const bool post_norms = model_.arch().post_norms;
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& w = model_.layers()[static_cast<size_t>(il)];
    // ---- attention block (or, on a hybrid's recurrent layers, the gated delta net) ----
    NormRows(x_.data(), w.attn_norm, n, xn_.data(), pool);  // xn [T][n_embd]  attn_norm
    if (c.is_recurrent(il)) {
      DeltaNetBlock(live, il, n, pool);  // proj [T][n_embd]
    } else {
      AttentionBlock(live, il, n, pool);  // proj [T][n_embd]  attn_out
    }
    if (post_norms) NormRows(proj_.data(), w.attn_post_norm, n, proj_.data(), pool);  // attn_post_norm
    {
      OpTimer timer(&times_, &times_.other_s);
      kernels::Add(proj_.data(), x_.data(), x_.data(), static_cast<int>(n * c.n_embd));  // x = ffn_inp
    }
    // ---- feed-forward block ----
    NormRows(x_.data(), w.ffn_norm, n, xn_.data(), pool);  // xn [T][n_embd]  ffn_norm
    FeedForward(w, n, pool);                                // proj [T][n_embd]  ffn_out
    if (post_norms) NormRows(proj_.data(), w.ffn_post_norm, n, proj_.data(), pool);  // ffn_post_norm
    OpTimer timer(&times_, &times_.other_s);
    kernels::Add(proj_.data(), x_.data(), x_.data(), static_cast<int>(n * c.n_embd));  // x = l_out
  }
  out_rows_.clear();
  for (const Live& l : live) {
    l.kv->Commit(l.n);
    if (l.mode == LogitsMode::kNone) continue;
    slice_logit_row_[l.slice] = static_cast<int64_t>(out_rows_.size());
    if (l.mode == LogitsMode::kLast) {
      out_rows_.push_back(l.row0 + l.n - 1);
    } else {
      for (int64_t t = 0; t < l.n; ++t) out_rows_.push_back(l.row0 + t);
    }
  }
  if (!out_rows_.empty()) Output(pool);
  return Status::Ok();
}

void ForwardContext::AttentionBlock(std::span<const Live> live, int il, int64_t n, kernels::ThreadPool& pool) {
  const ModelConfig& c = model_.config();
  const LayerWeights& w = model_.layers()[static_cast<size_t>(il)];
  const float* rope = c.is_swa(il) ? rope_swa_.data() : rope_.data();
  QkvStep step{c, w, pool, &times_, xn_.data(), n, pos_.data(), rope, q_.data(), k_.data(), v_.data()};
  step.qg = qg_.data();
  step.gate = att_gate_.data();
  model_.arch().qkv(step);  // q [T][q_dim], k [T][kv_dim_k], v [T][kv_dim_v], roped
  for (const Live& l : live) {
    for (int64_t t = 0; t < l.n; ++t) {
      l.kv->StoreK(il, l.pos0 + t, k_.data() + (l.row0 + t) * c.kv_dim_k());
      l.kv->StoreV(il, l.pos0 + t, v_.data() + (l.row0 + t) * c.kv_dim_v());
    }
  }
  Attention(live, il, pool);  // att [T][n_head*hd_v]
  if (model_.arch().attn_gate) {  // att *= sigmoid(gate) (qwen35)
    OpTimer timer(&times_, &times_.other_s);
    const int64_t dim = c.attn_out_dim();
    pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b * dim; i < e * dim; ++i) {
        att_[static_cast<size_t>(i)] *= 1.0f / (1.0f + std::exp(-att_gate_[static_cast<size_t>(i)]));
      }
    });
  }
  OpTimer timer(&times_, &times_.matmul_s);
  kernels::MatMul(w.wo, att_.data(), n, proj_.data(), pool);  // proj [T][n_embd]  attn_out
}

void ForwardContext::DeltaNetBlock(std::span<const Live> live, int il, int64_t n, kernels::ThreadPool& pool) {
  delta_slices_.clear();
  for (const Live& l : live) delta_slices_.push_back({l.kv, l.row0, l.n});
  delta_.Forward(model_.config(), model_.layers()[static_cast<size_t>(il)], il, delta_slices_, xn_.data(), n,
                 proj_.data(), pool, &times_);
}

void ForwardContext::Embed(const int32_t* tokens, int64_t row0, int64_t n, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.other_s);
  const GgufTensorInfo& e = model_.token_embd();
  const int64_t d = model_.config().n_embd;
  const uint64_t row_bytes = RowBytes(e.type, static_cast<uint64_t>(d));
  for (int64_t t = 0; t < n; ++t) {
    // Validated at load (type supported, n_embd a multiple of its block), so this cannot fail.
    (void)Dequantize(e.type, e.data + static_cast<uint64_t>(tokens[t]) * row_bytes, x_.data() + (row0 + t) * d,
                     static_cast<size_t>(d));
  }
  const float scale = model_.config().embd_scale;  // gemma: sqrt(n_embd) (inp_scaled)
  if (scale != 1.0f) kernels::Scale(x_.data() + row0 * d, scale, static_cast<int>(n * d));
}

void ForwardContext::NormRows(const float* x, const float* w, int64_t n, float* y, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.norm_s);
  const int d = static_cast<int>(model_.config().n_embd);
  const float eps = model_.config().rms_eps;
  pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) kernels::RmsNorm(x + t * d, w, eps, d, y + t * d);
  });
}

void ForwardContext::FeedForward(const LayerWeights& w, int64_t n, kernels::ThreadPool& pool) {
  const ModelConfig& c = model_.config();
  if (c.moe()) {
    moe_.Forward(c, w, xn_.data(), n, proj_.data(), pool, &times_);  // proj [T][n_embd]  ffn_moe_out
    return;
  }
  {
    OpTimer timer(&times_, &times_.matmul_s);
    const kernels::MatMulOut outs[] = {{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}};  // [T][n_ff] each
    kernels::MatMulShared(outs, 2, xn_.data(), n, pool);
  }
  {
    OpTimer timer(&times_, &times_.other_s);
    const int64_t ff = c.n_ff;
    const bool gelu = model_.arch().ffn_act == FfnAct::kGelu;
    pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {  // gate = act(gate) * up
      for (int64_t t = b; t < e; ++t) {
        float* g = gate_.data() + t * ff;
        const float* u = up_.data() + t * ff;
        if (gelu) {
          kernels::GeluMul(g, u, g, static_cast<int>(ff));
        } else {
          kernels::SiluMul(g, u, g, static_cast<int>(ff));
        }
      }
    });
  }
  OpTimer timer(&times_, &times_.matmul_s);
  kernels::MatMul(w.w_down, gate_.data(), n, proj_.data(), pool);  // proj [T][n_embd]
}

void ForwardContext::Output(kernels::ThreadPool& pool) {
  const int64_t d = model_.config().n_embd;
  const int64_t n_rows = static_cast<int64_t>(out_rows_.size());
  {
    OpTimer timer(&times_, &times_.norm_s);  // result_norm, gathered: xn row i = norm(x row out_rows_[i])
    const float eps = model_.config().rms_eps;
    pool.ParallelFor(n_rows, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) {
        kernels::RmsNorm(x_.data() + out_rows_[static_cast<size_t>(i)] * d, model_.output_norm(), eps,
                         static_cast<int>(d), xn_.data() + i * d);
      }
    });
  }
  OpTimer timer(&times_, &times_.matmul_s);
  kernels::MatMul(model_.output(), xn_.data(), n_rows, logits_.data(), pool);  // logits [rows][n_vocab]
  const float cap = model_.config().final_logit_softcap;
  if (cap > 0) kernels::TanhSoftCap(logits_.data(), cap, static_cast<int>(n_rows * model_.config().n_vocab));
}

}  // namespace ember
