// qwen3 and qwen3moe: plain projections, then an RMS norm over each head of q and k (attn_q_norm / attn_k_norm)
// BEFORE RoPE; NeoX RoPE (x[i], x[i + n_dims/2]).
#include "model/arch.h"
#include "model/model.h"

namespace ember {
namespace {

void Qwen3Qkv(const QkvStep& s) {
  ProjectQkv(s);                                   // q, k, v
  NormHeads(s, s.q, s.cfg.n_head, s.w.q_norm);     // Qcur_normed
  RopeHeads(s, s.q, s.cfg.n_head);                 // Qcur
  NormHeads(s, s.k, s.cfg.n_head_kv, s.w.k_norm);  // Kcur_normed
  RopeHeads(s, s.k, s.cfg.n_head_kv);              // Kcur
}

ArchSpec MakeQwen3Moe() {
  ArchSpec a{"qwen3moe", kernels::RopeLayout::kNeox, /*qkv_bias=*/false, /*qk_norm=*/true, /*rope_freqs=*/false,
             Qwen3Qkv};
  a.moe = true;  // the attention is qwen3's; the FFN is routed experts
  return a;
}

}  // namespace

extern const ArchSpec kQwen3Arch = {"qwen3", kernels::RopeLayout::kNeox, /*qkv_bias=*/false,
                                    /*qk_norm=*/true, /*rope_freqs=*/false, Qwen3Qkv};
extern const ArchSpec kQwen3MoeArch = MakeQwen3Moe();

}  // namespace ember
