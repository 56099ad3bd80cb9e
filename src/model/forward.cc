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
  gate_.resize(T * c.n_ff);
  up_.resize(T * c.n_ff);
  rope_.resize(T * c.rope_n_dims);
  if (c.n_swa > 0) rope_swa_.resize(T * c.rope_n_dims);
  logits_.resize((opts_.all_logits ? T : 1) * c.n_vocab);
  // scores_ and half_ grow in Attention to what the context in use needs (not max_ctx up front).
}

// Reads top to bottom like the model: embeddings, n_layer blocks, final norm, output projection.
Status ForwardContext::Run(KvState& kv, const int32_t* tokens, int64_t n, LogitsMode mode,
                           kernels::ThreadPool& pool) {
  const ModelConfig& c = model_.config();
  const int64_t pos0 = kv.n_pos();
  if (n < 1 || n > opts_.max_ubatch) {
    return InvalidArgument("forward: " + std::to_string(n) + " tokens (ubatch holds 1.." +
                           std::to_string(opts_.max_ubatch) + ")");
  }
  if (mode == LogitsMode::kAll && !opts_.all_logits) return InvalidArgument("forward: all_logits not enabled");
  if (pos0 + n > opts_.max_ctx) {
    return ResourceExhausted("forward: context full (" + std::to_string(pos0 + n) + " > " +
                             std::to_string(opts_.max_ctx) + " positions)");
  }
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.n_vocab) {
      return InvalidArgument("forward: token id " + std::to_string(tokens[t]) + " out of range [0, " +
                             std::to_string(c.n_vocab) + ")");
    }
  }
  EMBER_RETURN_IF_ERROR(kv.Reserve(n));
  Embed(tokens, n, pool);  // x [T][n_embd]
  {
    OpTimer timer(&times_, &times_.rope_s);
    const kernels::RopeParams rp = RopeParamsOf(c);
    for (int64_t t = 0; t < n; ++t) kernels::RopeCache(rp, pos0 + t, rope_.data() + t * c.rope_n_dims);
    if (c.n_swa > 0) {
      const kernels::RopeParams rs = RopeParamsSwaOf(c);
      for (int64_t t = 0; t < n; ++t) kernels::RopeCache(rs, pos0 + t, rope_swa_.data() + t * c.rope_n_dims);
    }
  }
  const bool post_norms = model_.arch().post_norms;
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& w = model_.layers()[static_cast<size_t>(il)];
    // ---- attention block ----
    NormRows(x_.data(), w.attn_norm, n, xn_.data(), pool);  // xn [T][n_embd]  attn_norm
    const float* rope = c.is_swa(il) ? rope_swa_.data() : rope_.data();
    const QkvStep step{c, w, pool, &times_, xn_.data(), n, pos0, rope, q_.data(), k_.data(), v_.data()};
    model_.arch().qkv(step);  // q [T][q_dim], k [T][kv_dim_k], v [T][kv_dim_v], roped
    for (int64_t t = 0; t < n; ++t) {
      kv.StoreK(il, pos0 + t, k_.data() + t * c.kv_dim_k());
      kv.StoreV(il, pos0 + t, v_.data() + t * c.kv_dim_v());
    }
    Attention(kv, il, n, pool);  // att [T][n_head*hd_v]
    {
      OpTimer timer(&times_, &times_.matmul_s);
      kernels::MatMul(w.wo, att_.data(), n, proj_.data(), pool);  // proj [T][n_embd]  attn_out
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
  kv.Commit(n);
  if (mode == LogitsMode::kLast) Output(n - 1, 1, pool);
  if (mode == LogitsMode::kAll) Output(0, n, pool);
  return Status::Ok();
}

void ForwardContext::Embed(const int32_t* tokens, int64_t n, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.other_s);
  const GgufTensorInfo& e = model_.token_embd();
  const int64_t d = model_.config().n_embd;
  const uint64_t row_bytes = RowBytes(e.type, static_cast<uint64_t>(d));
  for (int64_t t = 0; t < n; ++t) {
    // Validated at load (type supported, n_embd a multiple of its block), so this cannot fail.
    (void)Dequantize(e.type, e.data + static_cast<uint64_t>(tokens[t]) * row_bytes, x_.data() + t * d,
                     static_cast<size_t>(d));
  }
  const float scale = model_.config().embd_scale;  // gemma: sqrt(n_embd) (inp_scaled)
  if (scale != 1.0f) kernels::Scale(x_.data(), scale, static_cast<int>(n * d));
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

void ForwardContext::Output(int64_t first_row, int64_t n_rows, kernels::ThreadPool& pool) {
  const int64_t d = model_.config().n_embd;
  NormRows(x_.data() + first_row * d, model_.output_norm(), n_rows, xn_.data(), pool);  // result_norm
  OpTimer timer(&times_, &times_.matmul_s);
  kernels::MatMul(model_.output(), xn_.data(), n_rows, logits_.data(), pool);  // logits [rows][n_vocab]
  const float cap = model_.config().final_logit_softcap;
  if (cap > 0) kernels::TanhSoftCap(logits_.data(), cap, static_cast<int>(n_rows * model_.config().n_vocab));
}

}  // namespace ember
