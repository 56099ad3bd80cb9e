// The AVX-512 attention kernels (attention_avx512.inc, built natively in attention_avx512.cc) and the
// switch that selects them. Internal to kernels/: attention_head.cc and softmax.cc call them; every
// one is bitwise equal to the AVX2 / scalar sequence it replaces (see the .inc).
#pragma once

#include <cstdint>

namespace ember::kernels {

// Limits of the kernels: head_dim_k <= 32 * kAttnMaxHead32 for Scores2, 1 <= nq <= kAttnMaxGroup for
// AccumN.
inline constexpr int kAttnMaxHead32 = 16;
inline constexpr int kAttnMaxGroup = 6;

// Whether attention and softmax use the kernels below: the CPU passes CpuHasAvx512, EMBER_KERNELS
// does not cap the tier below avx512 (read once), and SetAttentionAvx512Enabled(false) is not in force.
bool AttnAvx512Active();

namespace avx512_attn {

// sa[j] = Dot(k_j, qa) * scale and sb[j] = Dot(k_j, qb) * scale (ops_avx2.cc's Dot<> order) for
// j < n; k is f32 [n][hd] with hd % 32 == 0, hd <= 32 * kAttnMaxHead32.
void Scores2(const float* k, int hd, int64_t n, const float* qa, const float* qb, float scale, float* sa,
             float* sb);
// For q < nq and j < n in order: out[q][i] = fma(p[q][j], v_j[i], out[q][i]) for i < hv; v is f32
// [n][hv] with hv % 8 == 0.
void AccumN(const float* const* p, float* const* out, int nq, const float* v, int hv, int64_t n);
// Softmax's pieces (softmax.cc): the max of the non-NaN x[i], and x[i] = ExpF(x[i] - max) with the
// sum in softmax.cc's order.
float MaxZ(const float* x, int n);
double ExpSumZ(float* x, float max, int n);

}  // namespace avx512_attn
}  // namespace ember::kernels
