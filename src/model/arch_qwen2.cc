// qwen2: projections with biases on q, k and v; NeoX RoPE (x[i], x[i + n_dims/2]).
#include "model/arch.h"
#include "model/model.h"

namespace ember {
namespace {

void Qwen2Qkv(const QkvStep& s) {
  ProjectQkv(s);                       // q, k, v incl. bq, bk, bv
  RopeHeads(s, s.q, s.cfg.n_head);     // Qcur
  RopeHeads(s, s.k, s.cfg.n_head_kv);  // Kcur
}

}  // namespace

extern const ArchSpec kQwen2Arch = {"qwen2", kernels::RopeLayout::kNeox, /*qkv_bias=*/true,
                                    /*qk_norm=*/false, /*rope_freqs=*/false, Qwen2Qkv};

}  // namespace ember
