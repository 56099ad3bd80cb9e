// llama (Llama 2/3, Mistral): plain projections, RoPE on adjacent pairs (x[2i], x[2i+1]); Llama 3.1+
// divides each pair's frequency by rope_freqs.weight (llama3 scaling).
#include "model/arch.h"
#include "model/model.h"

namespace ember {
namespace {

void LlamaQkv(const QkvStep& s) {
  ProjectQkv(s);                       // q [T][n_head*hd], k [T][n_head_kv*hd], v [T][n_head_kv*hd_v]
  RopeHeads(s, s.q, s.cfg.n_head);     // Qcur
  RopeHeads(s, s.k, s.cfg.n_head_kv);  // Kcur
}

}  // namespace

extern const ArchSpec kLlamaArch = {"llama", kernels::RopeLayout::kNorm, /*qkv_bias=*/false,
                                    /*qk_norm=*/false, /*rope_freqs=*/true, LlamaQkv};

}  // namespace ember
