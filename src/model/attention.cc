// Causal grouped-query attention over the block-structured KV state, mirroring ggml's non-flash path:
// scores = (k · q) * 1/sqrt(head_dim), softmax, out = Σ p_j v_j. With an F16 cache ggml rounds q and
// the probabilities to fp16 before its two matmuls (F16's dot type), so we do too (kernels/ops.h).
// A window layer (gemma3) lets the query at position p see keys (p - n_swa, p] only — llama.cpp masks
// the rest to -inf, which contributes exactly nothing, so skipping them is the same computation. A model
// that scales q itself (ModelConfig::attn_scale) gets scale 1 here, as llama.cpp's kq_scale = 1.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_head.h"
#include "model/forward.h"

namespace ember {
namespace {

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

// att [T][n_head * head_dim_v] from q [T][n_head * head_dim_k] and each live slice's KV state of
// `layer`, which already holds this pass's keys. Work items are (slice, token tile, kv head) triples;
// every query is computed whole by one thread in a fixed order (kernels/attention_head.h), so neither
// the split, the tiling nor the other slices of the step change a result.
void ForwardContext::Attention(std::span<const Live> live, int layer, kernels::ThreadPool& pool) {
  OpTimer timer(&times_, &times_.attention_s);
  const ModelConfig& c = model_.config();
  const int64_t group = c.n_head / c.n_head_kv;
  const float scale = c.attn_scale > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  const int64_t window = c.is_swa(layer) ? c.n_swa : 0;
  std::vector<AttnTile>& tiles = tiles_;
  tiles.clear();
  int64_t scratch_scores = 0, scratch_half = 0, max_slots = 0;
  for (const Live& l : live) {
    const int64_t keys = l.pos0 + l.n;  // the most keys a query of this slice sees
    // Queries computed together against one kv head (a GQA group times consecutive tokens): each KV
    // block is then read from memory (and an F16 one widened to f32) once per tile, not per query.
    const int64_t tile = kernels::AttnTileTokens(group, keys);
    for (int64_t t0 = 0; t0 < l.n; t0 += tile) tiles.push_back({&l, t0, std::min(l.n, t0 + tile), keys});
    const int64_t slots = tile * group;
    max_slots = std::max(max_slots, slots);
    scratch_scores = std::max(scratch_scores, slots * keys);
    scratch_half = std::max(scratch_half, slots * c.head_dim_k);
  }
  // Threads claim work items one at a time, costliest first: a causal query's cost grows with the keys
  // it reads, so the longest items go first and the short ones even out the end (a static split gave
  // the last of two threads ~3/4 of a prefill's attention; a stalled thread now holds up one item).
  std::stable_sort(tiles.begin(), tiles.end(), [](const AttnTile& a, const AttnTile& b) {
    return a.slice->pos0 + a.t1 > b.slice->pos0 + b.t1;
  });
  const size_t need_scores = static_cast<size_t>(pool.size() * scratch_scores);
  const size_t need_half = static_cast<size_t>(pool.size() * scratch_half);
  if (scores_.size() < need_scores) scores_.resize(need_scores);
  if (half_.size() < need_half) half_.resize(need_half);
  const size_t need_queries = static_cast<size_t>(pool.size() * max_slots);
  if (tile_queries_.size() < need_queries) tile_queries_.resize(need_queries);
  const KvConfig& kc = live.front().kv->config();
  kernels::AttnKvHead head;  // per item only ctx (which slice's kv head) changes
  head.head_dim_k = kc.head_dim_k;
  head.head_dim_v = kc.head_dim_v;
  head.block_size = kc.block_size;
  head.f16 = kc.dtype == KvDtype::kF16;
  head.block = HeadBlock;
  const int64_t n_items = static_cast<int64_t>(tiles.size()) * c.n_head_kv;
  pool.ParallelForChunks(n_items, 1, [&](int64_t b, int64_t e, int thread) {
    kernels::AttnQuery* queries = tile_queries_.data() + thread * max_slots;
    float* scores = scores_.data() + thread * scratch_scores;
    uint16_t* half = half_.data() + thread * scratch_half;
    kernels::AttnKvHead item = head;
    for (int64_t i = b; i < e; ++i) {
      const AttnTile& tl = tiles[static_cast<size_t>(i / c.n_head_kv)];
      const Live& l = *tl.slice;
      const int kvh = static_cast<int>(i % c.n_head_kv);
      int nq = 0;
      for (int64_t t = tl.t0; t < tl.t1; ++t) {
        const int64_t p = l.pos0 + t;  // the query's position
        const int64_t r = l.row0 + t;  // its activation row
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h, ++nq) {
          kernels::AttnQuery& qu = queries[nq];
          qu.q = q_.data() + r * c.q_dim() + h * c.head_dim_k;
          qu.k0 = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
          qu.n_keys = p + 1;
          qu.scores = scores + nq * tl.keys;
          qu.half = half + nq * c.head_dim_k;
          qu.out = att_.data() + r * c.attn_out_dim() + h * c.head_dim_v;
        }
      }
      const HeadKv ctx{l.kv, layer, kvh};
      item.ctx = &ctx;
      kernels::AttendHeads(item, queries, nq, scale);
    }
  });
}

}  // namespace ember
