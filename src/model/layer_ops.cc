// The shared building blocks of the per-architecture Q/K/V steps (arch.h), and the architecture table.
#include "kernels/matmul.h"
#include "model/arch.h"
#include "model/model.h"

namespace ember {

extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kGemma3Arch;
extern const ArchSpec kQwen35Arch;
extern const ArchSpec kQwen3MoeArch;
extern const ArchSpec kQwen35MoeArch;

const ArchSpec* FindArch(const std::string& name) {
  for (const ArchSpec* a : {&kLlamaArch, &kQwen2Arch, &kQwen3Arch, &kGemma3Arch, &kQwen35Arch, &kQwen3MoeArch,
                            &kQwen35MoeArch}) {
    if (name == a->name) return a;
  }
  return nullptr;
}

namespace {

// x[t] += bias for every row; rows split over the pool.
void AddBiasRows(kernels::ThreadPool& pool, float* x, const float* bias, int64_t n_tok, int64_t dim) {
  pool.ParallelFor(n_tok, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) kernels::AddBias(x + t * dim, bias, static_cast<int>(dim));
  });
}

}  // namespace

void ProjectQkv(const QkvStep& s) {
  const ModelConfig& c = s.cfg;
  {
    OpTimer timer(s.times, s.times ? &s.times->matmul_s : nullptr);
    // q [T][n_head*hd], k [T][n_head_kv*hd], v [T][n_head_kv*hd_v]: x quantized once for all three
    const kernels::MatMulOut outs[] = {{&s.w.wq, s.q}, {&s.w.wk, s.k}, {&s.w.wv, s.v}};
    kernels::MatMulShared(outs, 3, s.xn, s.n_tok, s.pool);
  }
  if (s.w.bq == nullptr) return;
  OpTimer timer(s.times, s.times ? &s.times->other_s : nullptr);
  AddBiasRows(s.pool, s.q, s.w.bq, s.n_tok, c.q_dim());
  AddBiasRows(s.pool, s.k, s.w.bk, s.n_tok, c.kv_dim_k());
  AddBiasRows(s.pool, s.v, s.w.bv, s.n_tok, c.kv_dim_v());
}

void NormHeads(const QkvStep& s, float* x, int64_t n_heads, const float* w) {
  OpTimer timer(s.times, s.times ? &s.times->norm_s : nullptr);
  const int hd = static_cast<int>(s.cfg.head_dim_k);
  s.pool.ParallelFor(s.n_tok * n_heads, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) kernels::RmsNorm(x + i * hd, w, s.cfg.rms_eps, hd, x + i * hd);
  });
}

kernels::RopeParams RopeParamsOf(const ModelConfig& c) {
  kernels::RopeParams p;
  p.layout = c.rope_layout;
  p.head_dim = static_cast<int>(c.head_dim_k);
  p.n_dims = static_cast<int>(c.rope_n_dims);
  p.freq_base = c.rope_freq_base;
  p.freq_scale = c.rope_freq_scale;
  p.freq_factors = c.rope_freq_factors.empty() ? nullptr : c.rope_freq_factors.data();
  return p;
}

kernels::RopeParams RopeParamsSwaOf(const ModelConfig& c) {
  kernels::RopeParams p = RopeParamsOf(c);
  p.freq_base = c.rope_freq_base_swa;
  p.freq_scale = 1.0f;
  p.freq_factors = nullptr;
  return p;
}

void ScaleHeads(const QkvStep& s, float* x, int64_t n_heads, float scale) {
  OpTimer timer(s.times, s.times ? &s.times->other_s : nullptr);
  const int64_t row = n_heads * s.cfg.head_dim_k;
  s.pool.ParallelFor(s.n_tok, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) kernels::Scale(x + t * row, scale, static_cast<int>(row));
  });
}

void RopeHeads(const QkvStep& s, float* x, int64_t n_heads) {
  OpTimer timer(s.times, s.times ? &s.times->rope_s : nullptr);
  const ModelConfig& c = s.cfg;
  const kernels::RopeParams p = RopeParamsOf(c);
  const int64_t row = n_heads * c.head_dim_k;
  s.pool.ParallelFor(s.n_tok, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      kernels::Rope(p, s.pos[t], static_cast<int>(n_heads), x + t * row, s.rope_cache + t * c.rope_n_dims);
    }
  });
}

}  // namespace ember
