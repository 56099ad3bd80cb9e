// qwen35 (Qwen3.5 / 3.6 dense hybrids), attention layers: attn_q projects to [q | gate] for each head;
// q and k are RMS-normed per head, then NeoX-roped over the first rope.dimension_count dims (the
// interleaved multi-section RoPE with one text position in every section); the attention output is
// multiplied by sigmoid(gate) before attn_output (forward.cc). The delta-net layers are model/delta_net.cc.
#include <cstring>

#include "kernels/matmul.h"
#include "model/arch.h"
#include "model/model.h"

namespace ember {
namespace {

void Qwen35Qkv(const QkvStep& s) {
  const ModelConfig& c = s.cfg;
  const int64_t hd = c.head_dim_k, qd = c.q_dim();
  {
    OpTimer timer(s.times, s.times ? &s.times->matmul_s : nullptr);
    const kernels::MatMulOut outs[] = {{&s.w.wq, s.qg}, {&s.w.wk, s.k}, {&s.w.wv, s.v}};
    kernels::MatMulShared(outs, 3, s.xn, s.n_tok, s.pool);
  }
  {
    OpTimer timer(s.times, s.times ? &s.times->other_s : nullptr);
    s.pool.ParallelFor(s.n_tok, [&](int64_t b, int64_t e, int) {  // Qcur_full -> Qcur, gate
      for (int64_t t = b; t < e; ++t) {
        for (int64_t h = 0; h < c.n_head; ++h) {
          const float* src = s.qg + t * 2 * qd + h * 2 * hd;
          std::memcpy(s.q + t * qd + h * hd, src, static_cast<size_t>(hd) * sizeof(float));
          std::memcpy(s.gate + t * qd + h * hd, src + hd, static_cast<size_t>(hd) * sizeof(float));
        }
      }
    });
  }
  NormHeads(s, s.q, c.n_head, s.w.q_norm);     // Qcur_normed
  NormHeads(s, s.k, c.n_head_kv, s.w.k_norm);  // Kcur_normed
  RopeHeads(s, s.q, c.n_head);
  RopeHeads(s, s.k, c.n_head_kv);
}

ArchSpec MakeQwen35(const char* name, bool moe) {
  ArchSpec a{name, kernels::RopeLayout::kNeox, /*qkv_bias=*/false, /*qk_norm=*/true, /*rope_freqs=*/false, Qwen35Qkv};
  a.attn_gate = true;
  a.hybrid = true;
  a.ffn_norm_name = "post_attention_norm.weight";
  a.moe = moe;  // qwen35moe: routed experts plus a sigmoid-gated shared expert (model/moe.h)
  a.moe_shared_expert = moe;
  return a;
}

}  // namespace

extern const ArchSpec kQwen35Arch = MakeQwen35("qwen35", false);
extern const ArchSpec kQwen35MoeArch = MakeQwen35("qwen35moe", true);

}  // namespace ember
