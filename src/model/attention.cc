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

// Queries computed together against one kv head (a GQA group times a few consecutive tokens): each
// KV block is then read from memory once per tile instead of once per query.
constexpr int64_t kTileQueries = 16;
constexpr int64_t kTileScoreFloats = int64_t{1} << 17;

struct HeadKv {
  const KvState* kv;
  int layer;
  int kvh;
};

const uint8_t* HeadBlock(const void* ctx, bool v, int64_t b) {
  const HeadKv& h = *static_cast<const HeadKv*>(ctx);
  return v ? h.kv->VHead(h.layer, b, h.kvh) : h.kv->KHead(h.layer, b, h.kvh);
}

}  // namespace

// att [T][n_head * head_dim_v] from q [T][n_head * head_dim_k] and the KV state of `layer`, which
// already holds this ubatch's keys. Work items are (token tile, kv head) pairs; every query is
// computed whole by one thread in a fixed order (kernels/attention_head.h), so neither the split nor
// the tiling changes a result.
void ForwardContext::Attention(const KvState& kv, int layer, int64_t n, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.attention_s);
  const ModelConfig& c = model_.config();
  const KvConfig& kc = kv.config();
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t pos0 = kv.n_pos();  // not committed yet: the ubatch's first position
  const int64_t keys = pos0 + n;     // the most keys a query sees
  // Tokens per tile; fewer at long contexts, so that the per-thread scratch stays near 512 KiB of
  // scores (a GQA group is the least: a long-context prefill still reads each block once per group).
  const int64_t tile = std::max<int64_t>(1, std::min(kTileQueries / group, kTileScoreFloats / (group * keys)));
  const int64_t n_tiles = (n + tile - 1) / tile;
  const float scale = c.attn_scale > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  const int64_t window = c.is_swa(layer) ? c.n_swa : 0;
  // Per thread and query slot: scores [keys] and halves [head_dim_k + keys].
  const int64_t slots = tile * group;
  const int64_t half_stride = keys + c.head_dim_k;
  const size_t need_scores = static_cast<size_t>(pool.size() * slots * keys);
  const size_t need_half = static_cast<size_t>(pool.size() * slots * half_stride);
  if (scores_.size() < need_scores) scores_.resize(need_scores);
  if (half_.size() < need_half) half_.resize(need_half);
  const size_t need_queries = static_cast<size_t>(pool.size() * slots);
  if (tile_queries_.size() < need_queries) tile_queries_.resize(need_queries);
  // Threads claim work items one at a time, last tiles first: a causal query's cost grows with its
  // position, so the longest items go first and the short ones even out the end (a static split gave
  // the last of two threads ~3/4 of a prefill's attention; a stalled thread now holds up one item).
  kernels::AttnKvHead head;  // per item only ctx (which kv head) changes
  head.head_dim_k = kc.head_dim_k;
  head.head_dim_v = kc.head_dim_v;
  head.block_size = kc.block_size;
  head.f16 = kc.dtype == KvDtype::kF16;
  head.block = HeadBlock;
  pool.ParallelForChunks(n_tiles * c.n_head_kv, 1, [&](int64_t b, int64_t e, int thread) {
    kernels::AttnQuery* queries = tile_queries_.data() + thread * slots;
    kernels::AttnKvHead item = head;
    for (int64_t i = b; i < e; ++i) {
      const int64_t t0 = (n_tiles - 1 - i / c.n_head_kv) * tile, t1 = std::min(n, t0 + tile);
      const int kvh = static_cast<int>(i % c.n_head_kv);
      int nq = 0;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p = pos0 + t;  // the query's position
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h, ++nq) {
          const int64_t slot = thread * slots + nq;
          kernels::AttnQuery& qu = queries[nq];
          qu.q = q_.data() + t * c.q_dim() + h * c.head_dim_k;
          qu.k0 = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
          qu.n_keys = p + 1;
          qu.scores = scores_.data() + slot * keys;
          qu.half = half_.data() + slot * half_stride;
          qu.out = att_.data() + t * c.attn_out_dim() + h * c.head_dim_v;
        }
      }
      const HeadKv ctx{&kv, layer, kvh};
      item.ctx = &ctx;
      kernels::AttendHeads(item, queries, nq, scale);
    }
  });
}

}  // namespace ember
