// gemma3: plain projections, a per-head RMS norm of q and k before NeoX RoPE (as qwen3), then q is
// scaled by attention scale (1/sqrt(head_dim)) before QK — the attention itself then applies no
// further scale. Window layers rope with their own base (ModelConfig::rope_freq_base_swa); the forward
// pass hands this step the matching cos/sin cache. Post-norms after attention and FFN, GeGLU, the
// embedding scale and the logit soft-cap live in the shared forward pass (forward.cc).
#include "model/arch.h"
#include "model/model.h"

namespace ember {
namespace {

void Gemma3Qkv(const QkvStep& s) {
  ProjectQkv(s);                                       // q, k, v
  NormHeads(s, s.q, s.cfg.n_head, s.w.q_norm);         // Qcur_normed
  RopeHeads(s, s.q, s.cfg.n_head);                     // Qcur
  NormHeads(s, s.k, s.cfg.n_head_kv, s.w.k_norm);      // Kcur_normed
  RopeHeads(s, s.k, s.cfg.n_head_kv);                  // Kcur
  ScaleHeads(s, s.q, s.cfg.n_head, s.cfg.attn_scale);  // Qcur * f_attention_scale
}

}  // namespace

extern const ArchSpec kGemma3Arch = {"gemma3", kernels::RopeLayout::kNeox, /*qkv_bias=*/false,
                                     /*qk_norm=*/true, /*rope_freqs=*/false, Gemma3Qkv,
                                     /*post_norms=*/true, FfnAct::kGelu};

}  // namespace ember
