// GELU-gated feed-forward (GeGLU, Gemma) and tanh soft-capping, with ggml's CPU numerics.
//
// ggml's CPU backend evaluates GELU through a 65,536-entry fp16 lookup table: the input is rounded to
// fp16, the table holds fp16(gelu_tanh(x)) for every fp16 x (computed in f32 with tanhf), and inputs
// outside (-10, 10) take the limits 0 and x. GeluMul reproduces that exactly, so a Gemma forward pass
// stays bit-comparable with llama.cpp's (a float gelu would differ by ~1e-4 relative).
//
// Thread-safety: pure functions; the table is built once on first use (thread-safe static init).
// Batch invariance: every element depends only on its own inputs.
#pragma once

namespace ember::kernels {

// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))) in f32 — the table's source.
float GeluTanhF32(float x);

// out[i] = gelu(gate[i]) * up[i] through the fp16 table as ggml_vec_geglu_f32. In place ok.
void GeluMul(const float* gate, const float* up, float* out, int n);

// x[i] = cap * tanh(x[i] * (1 / cap)) (final-logit soft-capping, ggml scale-tanh-scale). In place.
void TanhSoftCap(float* x, float cap, int n);

}  // namespace ember::kernels
