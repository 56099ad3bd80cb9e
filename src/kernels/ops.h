// Element-wise and row-wise operations of a transformer forward pass, with ggml's numerics where they
// matter for logit parity with llama.cpp. All functions are single-threaded and deterministic: each
// output depends only on its own row's inputs, in a fixed order (batch invariance, docs/cache-spec.md §6).
// Pointers may alias only where stated ("in place ok").
#pragma once

#include <cstdint>

namespace ember::kernels {

// y = x * (1 / sqrtf(mean(x²) + eps)) * w, as ggml: squares in f32, summed in double, the mean
// rounded to f32; then (x * scale) * w. w may be null (plain RMS normalisation). In place ok (y == x).
void RmsNorm(const float* x, const float* w, float eps, int n, float* y);

enum class RopeLayout {
  kNorm,  // rotate (x[2i], x[2i+1]) — llama
  kNeox,  // rotate (x[i], x[i + n_dims/2]) — qwen2, qwen3, gemma
};

struct RopeParams {
  RopeLayout layout = RopeLayout::kNorm;
  int head_dim = 0;          // elements per head
  int n_dims = 0;            // rotated dims (<= head_dim, even); the rest pass through (partial rotary)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // linear position interpolation (1 = none)
  float attn_factor = 1.0f;  // multiplies cos and sin (ggml's mscale)
  const float* freq_factors = nullptr;  // n_dims/2 per-pair divisors (llama3 rope_freqs), or null
};

// Fills cache[2i] = cos(theta_i), cache[2i+1] = sin(theta_i) for i < n_dims/2 exactly as ggml's
// rope_cache_init: theta_0 = pos, theta_{i+1} = theta_i * powf(base, -2/n_dims) (repeated f32
// multiplication, not powf per pair), then divided by freq_factors[i] and scaled by freq_scale.
// cache holds n_dims floats.
void RopeCache(const RopeParams& p, int64_t pos, float* cache);

// Rotates n_heads heads of p.head_dim floats each (contiguous) at position pos, in place.
// `cache` is RopeCache(p, pos) (pass null to compute it here).
void Rope(const RopeParams& p, int64_t pos, int n_heads, float* x, const float* cache = nullptr);

// x[i] = exp(x[i] - max) / sum: max-subtracted, exp in f32 (ExpF, fast_exp.h), sum in double in
// index order, then multiplied by f32(1/sum). In place. Entries equal to -inf become 0; a row that is
// all -inf becomes all 0.
void Softmax(float* x, int n);
// Softmax, then x[i] = f32(fp16(x[i])): the probabilities as ggml's F16 path multiplies V by them
// (RoundToF16 and back), with the scaling and the rounding in one pass.
void SoftmaxToF16Weights(float* x, int n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)) in f32 as ggml (exp: ExpF of
// fast_exp.h, within ~2 ulp of expf). In place ok (out == gate or up).
void SiluMul(const float* gate, const float* up, float* out, int n);

// out[i] = a[i] + b[i]. In place ok.
void Add(const float* a, const float* b, float* out, int n);
// x[i] += bias[i].
void AddBias(float* x, const float* bias, int n);
// x[i] *= s.
void Scale(float* x, float s, int n);

// --- Attention primitives over an f16 or f32 KV cache ---------------------------------------------
// ggml's non-flash attention with an F16 cache rounds q to fp16 and the softmax probabilities to fp16
// before the two matmuls (F16's dot type is F16), so the matching sequence is:
//   RoundToF16(q) ; DotF16F16(k_row, q16) per key ; Softmax ; RoundToF16(p) ; per output dim
//   DotF16F16(v_column, p16) — or, with V stored row-major per token, AxpyF16(f32(p16[j]), v_j, out)
//   (a different summation order from ggml's: differs in the last bits only).
// All dots: products exact in f32, accumulated with FMA in 8 lanes x 4 (fixed order, see dot_f16.cc).

// dst[i] = fp16(src[i]), round to nearest even.
void RoundToF16(const float* src, uint16_t* dst, int n);
// sum_i f32(a[i]) * f32(b[i]) — both fp16.
float DotF16F16(const uint16_t* a, const uint16_t* b, int n);
// sum_i f32(k[i]) * q[i] — k fp16, q f32 (no rounding of q; for f32-exact experiments).
float DotF16(const uint16_t* k, const float* q, int n);
// sum_i a[i] * b[i] — f32 (F32 KV cache).
float DotF32(const float* a, const float* b, int n);
// out[i] += a * f32(v[i]).
void AxpyF16(float a, const uint16_t* v, float* out, int n);
// out[i] += a * v[i].
void AxpyF32(float a, const float* v, float* out, int n);

// ggml's flash-attention path with an F16 V cache keeps the output accumulator in fp16:
// acc[i] = fp16(fma(f32(v[i]), a, f32(acc[i]))) (ggml_vec_mad_f16) and, on a new running max,
// acc[i] = fp16(f32(acc[i]) * s) (ggml_vec_scale_f16). Its online softmax uses libm expf and
// converts q to fp16 for DotF16F16. Use these to mirror that path.
void MadF16(float a, const uint16_t* v, uint16_t* acc, int n);
void ScaleF16(uint16_t* acc, float s, int n);

}  // namespace ember::kernels
