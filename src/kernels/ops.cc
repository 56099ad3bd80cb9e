#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/fast_exp.h"
#include "kernels/ops_internal.h"
#include "util/half.h"

namespace ember::kernels {

void RmsNorm(const float* x, const float* w, float eps, int n, float* y) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);  // square in f32, as ggml
  const float mean = static_cast<float>(sum / n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w == nullptr) {
    for (int i = 0; i < n; ++i) y[i] = x[i] * scale;
  } else {
    for (int i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  }
}

void RopeCache(const RopeParams& p, int64_t pos, float* cache) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < p.n_dims / 2; ++i) {
    const float ff = p.freq_factors != nullptr ? p.freq_factors[i] : 1.0f;
    const float t = p.freq_scale * (theta / ff);
    cache[2 * i] = std::cos(t) * p.attn_factor;
    cache[2 * i + 1] = std::sin(t) * p.attn_factor;
    theta *= theta_scale;
  }
}

namespace {
// ggml's rotate_pairs: (x0, x1) -> (x0 c - x1 s, x0 s + x1 c).
inline void Rotate(float* a, float* b, float c, float s) {
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x0 * s + x1 * c;
}
}  // namespace

void Rope(const RopeParams& p, int64_t pos, int n_heads, float* x, const float* cache) {
  constexpr int kStackDims = 1024;
  float local[kStackDims];
  if (cache == nullptr) {
    // n_dims beyond kStackDims does not exist in real models; clamp rather than overflow.
    RopeParams q = p;
    if (q.n_dims > kStackDims) q.n_dims = kStackDims;
    RopeCache(q, pos, local);
    cache = local;
  }
  const int half = p.n_dims / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * p.head_dim;
    for (int i = 0; i < half; ++i) {
      if (p.layout == RopeLayout::kNorm) {
        Rotate(&v[2 * i], &v[2 * i + 1], cache[2 * i], cache[2 * i + 1]);
      } else {
        Rotate(&v[i], &v[i + half], cache[2 * i], cache[2 * i + 1]);
      }
    }
  }
}

void SiluMul(const float* gate, const float* up, float* out, int n) {
  constexpr int kChunk = 256;
  float e[kChunk];
  for (int c = 0; c < n; c += kChunk) {
    const int m = std::min(kChunk, n - c);
    for (int i = 0; i < m; ++i) e[i] = -gate[c + i];
    ExpArray(e, e, m);
    for (int i = 0; i < m; ++i) out[c + i] = (gate[c + i] / (1.0f + e[i])) * up[c + i];
  }
}

void Add(const float* a, const float* b, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void AddBias(float* x, const float* bias, int n) {
  for (int i = 0; i < n; ++i) x[i] += bias[i];
}
void Scale(float* x, float s, int n) {
  for (int i = 0; i < n; ++i) x[i] *= s;
}

// The attention primitives dispatch to AVX2 (ops_avx2.cc) when the CPU has it (CpuHasAvx2); the
// scalar versions below follow the same lane order, so both give bitwise the same results.

namespace {

// 32 f32 lanes, FMA in index order, the tail zero-padded, fixed reduction (the F16 matmul's order).
template <typename A, typename B>
float Dot32Lanes(const A* a, const B* b, int n, float (*fa)(A), float (*fb)(B)) {
  float acc[32] = {};
  for (int c = 0; c < n; c += 32) {
    for (int l = 0; l < 32; ++l) {
      const bool in = c + l < n;
      acc[l] = std::fma(in ? fa(a[c + l]) : 0.0f, in ? fb(b[c + l]) : 0.0f, acc[l]);
    }
  }
  float v[8];
  for (int l = 0; l < 8; ++l) v[l] = (acc[l] + acc[8 + l]) + (acc[16 + l] + acc[24 + l]);
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
float F16(uint16_t h) { return Fp16ToF32(h); }
float Id(float f) { return f; }
}  // namespace

namespace scalar {
void RoundToF16(const float* src, uint16_t* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = F32ToFp16(src[i]);
}
float DotF16F16(const uint16_t* a, const uint16_t* b, int n) { return Dot32Lanes(a, b, n, F16, F16); }
float DotF16(const uint16_t* k, const float* q, int n) { return Dot32Lanes(k, q, n, F16, Id); }
float DotF32(const float* a, const float* b, int n) { return Dot32Lanes(a, b, n, Id, Id); }
void AxpyF16(float a, const uint16_t* v, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = std::fma(a, Fp16ToF32(v[i]), out[i]);
}
void AxpyF32(float a, const float* v, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = std::fma(a, v[i], out[i]);
}
void MadF16(float a, const uint16_t* v, uint16_t* acc, int n) {
  for (int i = 0; i < n; ++i) acc[i] = F32ToFp16(std::fma(Fp16ToF32(v[i]), a, Fp16ToF32(acc[i])));
}
void ScaleF16(uint16_t* acc, float s, int n) {
  for (int i = 0; i < n; ++i) acc[i] = F32ToFp16(Fp16ToF32(acc[i]) * s);
}
}  // namespace scalar

void RoundToF16(const float* src, uint16_t* dst, int n) {
  CpuHasAvx2() ? avx2::RoundToF16(src, dst, n) : scalar::RoundToF16(src, dst, n);
}
float DotF16F16(const uint16_t* a, const uint16_t* b, int n) {
  return CpuHasAvx2() ? avx2::DotF16F16(a, b, n) : scalar::DotF16F16(a, b, n);
}
float DotF16(const uint16_t* k, const float* q, int n) {
  return CpuHasAvx2() ? avx2::DotF16(k, q, n) : scalar::DotF16(k, q, n);
}
float DotF32(const float* a, const float* b, int n) {
  return CpuHasAvx2() ? avx2::DotF32(a, b, n) : scalar::DotF32(a, b, n);
}
void AxpyF16(float a, const uint16_t* v, float* out, int n) {
  CpuHasAvx2() ? avx2::AxpyF16(a, v, out, n) : scalar::AxpyF16(a, v, out, n);
}
void MadF16(float a, const uint16_t* v, uint16_t* acc, int n) {
  CpuHasAvx2() ? avx2::MadF16(a, v, acc, n) : scalar::MadF16(a, v, acc, n);
}
void ScaleF16(uint16_t* acc, float s, int n) {
  CpuHasAvx2() ? avx2::ScaleF16(acc, s, n) : scalar::ScaleF16(acc, s, n);
}
void AxpyF32(float a, const float* v, float* out, int n) {
  CpuHasAvx2() ? avx2::AxpyF32(a, v, out, n) : scalar::AxpyF32(a, v, out, n);
}

}  // namespace ember::kernels
