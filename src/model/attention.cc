// Causal grouped-query attention over the block-structured KV state, mirroring ggml's non-flash path:
// scores = (k · q) * 1/sqrt(head_dim), softmax, out = Σ p_j v_j. With an F16 cache ggml rounds q and
// the probabilities to fp16 before its two matmuls (F16's dot type), so we do too (kernels/ops.h).
// A window layer (gemma3) lets the query at position p see keys (p - n_swa, p] only — llama.cpp masks
// the rest to -inf, which contributes exactly nothing, so skipping them is the same computation. A model
// that scales q itself (ModelConfig::attn_scale) gets scale 1 here, as llama.cpp's kq_scale = 1.
#include <algorithm>
#include <cmath>

#include "kernels/attention_head.h"
#include "model/forward.h"

namespace ember {
namespace {

struct HeadScratch {
  float* scores;    // [max_ctx]
  uint16_t* half;   // [max_ctx + head_dim_k]: q16 then p16
};

struct HeadKv {
  const KvState* kv;
  int layer;
  int kvh;
};

const uint8_t* HeadBlock(const void* ctx, bool v, int64_t b) {
  const HeadKv& h = *static_cast<const HeadKv*>(ctx);
  return v ? h.kv->VHead(h.layer, b, h.kvh) : h.kv->KHead(h.layer, b, h.kvh);
}

// One query head at position n_keys - 1 against keys [k0, n_keys) of kv head kvh, in position order
// (kernels/attention_head.h: one fused call per KV block, q widened once, output kept in registers).
void AttendHead(const KvState& kv, int layer, int kvh, const float* q, int64_t k0, int64_t n_keys, float scale,
                const HeadScratch& s, float* out) {
  const KvConfig& c = kv.config();
  const HeadKv ctx{&kv, layer, kvh};
  kernels::AttnKvHead head;
  head.head_dim_k = c.head_dim_k;
  head.head_dim_v = c.head_dim_v;
  head.block_size = c.block_size;
  head.f16 = c.dtype == KvDtype::kF16;
  head.ctx = &ctx;
  head.block = HeadBlock;
  kernels::AttendHead(head, q, k0, n_keys, scale, s.scores, s.half, out);
}

}  // namespace

// att [T][n_head * head_dim_v] from q [T][n_head * head_dim_k] and the KV state of `layer`, which
// already holds this ubatch's keys. Work items are (token, head) pairs; each is computed whole by one
// thread, so the split never changes a result.
void ForwardContext::Attention(const KvState& kv, int layer, int64_t n, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.attention_s);
  const ModelConfig& c = model_.config();
  const int64_t group = c.n_head / c.n_head_kv;
  const float scale = c.attn_scale > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  const int64_t window = c.is_swa(layer) ? c.n_swa : 0;
  const int64_t pos0 = kv.n_pos();  // not committed yet: the ubatch's first position
  const int64_t half_stride = opts_.max_ctx + c.head_dim_k;
  pool.ParallelFor(n * c.n_head, [&](int64_t b, int64_t e, int thread) {
    const HeadScratch s{scores_.data() + thread * opts_.max_ctx, half_.data() + thread * half_stride};
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / c.n_head, h = i % c.n_head;
      const int64_t p = pos0 + t;  // the query's position
      const int64_t k0 = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
      AttendHead(kv, layer, static_cast<int>(h / group), q_.data() + t * c.q_dim() + h * c.head_dim_k, k0,
                 p + 1, scale, s, att_.data() + t * c.attn_out_dim() + h * c.head_dim_v);
    }
  });
}

}  // namespace ember
