// Causal grouped-query attention over the block-structured KV state, mirroring ggml's non-flash path:
// scores = (k · q) * 1/sqrt(head_dim), softmax, out = Σ p_j v_j. With an F16 cache ggml rounds q and
// the probabilities to fp16 before its two matmuls (F16's dot type), so we do too (kernels/ops.h).
#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "model/forward.h"
#include "util/half.h"

namespace ember {
namespace {

struct HeadScratch {
  float* scores;    // [max_ctx]
  uint16_t* half;   // [max_ctx + head_dim_k]: q16 then p16
};

// One query head at position n_keys - 1 against keys [0, n_keys) of kv head kvh, in position order.
void AttendHead(const KvState& kv, int layer, int kvh, const float* q, int64_t n_keys, float scale,
                const HeadScratch& s, float* out) {
  const KvConfig& c = kv.config();
  const int hd = c.head_dim_k, hv = c.head_dim_v;
  const int64_t bs = c.block_size;
  const bool f16 = c.dtype == KvDtype::kF16;
  uint16_t* q16 = s.half;
  uint16_t* p16 = s.half + hd;
  if (f16) kernels::RoundToF16(q, q16, hd);
  for (int64_t b = 0; b * bs < n_keys; ++b) {  // scores[j] = (k_j · q) * scale
    const int64_t cnt = std::min(bs, n_keys - b * bs);
    const uint8_t* kh = kv.KHead(layer, b, kvh);  // [bs][hd]
    float* sc = s.scores + b * bs;
    for (int64_t j = 0; j < cnt; ++j) {
      const float dot = f16 ? kernels::DotF16F16(reinterpret_cast<const uint16_t*>(kh) + j * hd, q16, hd)
                            : kernels::DotF32(reinterpret_cast<const float*>(kh) + j * hd, q, hd);
      sc[j] = dot * scale;
    }
  }
  kernels::Softmax(s.scores, static_cast<int>(n_keys));
  if (f16) kernels::RoundToF16(s.scores, p16, static_cast<int>(n_keys));
  std::fill(out, out + hv, 0.0f);
  for (int64_t b = 0; b * bs < n_keys; ++b) {  // out = Σ_j p_j v_j
    const int64_t cnt = std::min(bs, n_keys - b * bs);
    const uint8_t* vh = kv.VHead(layer, b, kvh);  // [bs][hv]
    for (int64_t j = 0; j < cnt; ++j) {
      if (f16) {
        kernels::AxpyF16(Fp16ToF32(p16[b * bs + j]), reinterpret_cast<const uint16_t*>(vh) + j * hv, out, hv);
      } else {
        kernels::AxpyF32(s.scores[b * bs + j], reinterpret_cast<const float*>(vh) + j * hv, out, hv);
      }
    }
  }
}

}  // namespace

// att [T][n_head * head_dim_v] from q [T][n_head * head_dim_k] and the KV state of `layer`, which
// already holds this ubatch's keys. Work items are (token, head) pairs; each is computed whole by one
// thread, so the split never changes a result.
void ForwardContext::Attention(const KvState& kv, int layer, int64_t n, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.attention_s);
  const ModelConfig& c = model_.config();
  const int64_t group = c.n_head / c.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  const int64_t pos0 = kv.n_pos();  // not committed yet: the ubatch's first position
  const int64_t half_stride = opts_.max_ctx + c.head_dim_k;
  pool.ParallelFor(n * c.n_head, [&](int64_t b, int64_t e, int thread) {
    const HeadScratch s{scores_.data() + thread * opts_.max_ctx, half_.data() + thread * half_stride};
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / c.n_head, h = i % c.n_head;
      AttendHead(kv, layer, static_cast<int>(h / group), q_.data() + t * c.q_dim() + h * c.head_dim_k,
                 pos0 + t + 1, scale, s, att_.data() + t * c.attn_out_dim() + h * c.head_dim_v);
    }
  });
}

}  // namespace ember
