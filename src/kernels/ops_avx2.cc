// AVX2 versions of the attention primitives of ops.h; bitwise equal to the scalar ones in ops.cc
// (same 32-lane FMA order, zero-padded tail, same final reduction).
#include <algorithm>

#include "kernels/avx2_util.h"
#include "kernels/ops_internal.h"

namespace ember::kernels::avx2 {
namespace {

EMBER_AVX2 inline __m256 F16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
EMBER_AVX2 inline __m256 F32x8(const float* p) { return _mm256_loadu_ps(p); }

struct H { using T = uint16_t; EMBER_AVX2 static __m256 Load(const T* p) { return F16x8(p); } };
struct F { using T = float; EMBER_AVX2 static __m256 Load(const T* p) { return F32x8(p); } };

template <class A, class B>
EMBER_AVX2 float Dot(const typename A::T* a, const typename B::T* b, int n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  const int full = n / 32 * 32;
  for (int c = 0; c < full; c += 32) {
    for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(A::Load(a + c + 8 * k), B::Load(b + c + 8 * k), acc[k]);
  }
  if (full < n) {
    alignas(32) typename A::T ta[32] = {};
    alignas(32) typename B::T tb[32] = {};
    std::copy(a + full, a + n, ta);
    std::copy(b + full, b + n, tb);
    for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(A::Load(ta + 8 * k), B::Load(tb + 8 * k), acc[k]);
  }
  return Hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

}  // namespace

EMBER_AVX2 void RoundToF16(const float* src, uint16_t* dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) {
    dst[i] = static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT), 0));
  }
}
EMBER_AVX2 float DotF16F16(const uint16_t* a, const uint16_t* b, int n) { return Dot<H, H>(a, b, n); }
EMBER_AVX2 float DotF16(const uint16_t* k, const float* q, int n) { return Dot<H, F>(k, q, n); }
EMBER_AVX2 float DotF32(const float* a, const float* b, int n) { return Dot<F, F>(a, b, n); }

EMBER_AVX2 void AxpyF16(float a, const uint16_t* v, float* out, int n) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, F16x8(v + i), _mm256_loadu_ps(out + i)));
  for (; i < n; ++i) {
    const float f = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(v[i])));
    out[i] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(f), _mm_set_ss(out[i])));
  }
}
EMBER_AVX2 void AxpyF32(float a, const float* v, float* out, int n) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(v + i), _mm256_loadu_ps(out + i)));
  for (; i < n; ++i) out[i] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(v[i]), _mm_set_ss(out[i])));
}

namespace {
EMBER_AVX2 inline float H2F(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }
EMBER_AVX2 inline uint16_t F2H(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
EMBER_AVX2 inline void StoreF16x8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
}  // namespace

EMBER_AVX2 void MadF16(float a, const uint16_t* v, uint16_t* acc, int n) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) StoreF16x8(acc + i, _mm256_fmadd_ps(F16x8(v + i), va, F16x8(acc + i)));
  for (; i < n; ++i) {
    acc[i] = F2H(_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(H2F(v[i])), _mm_set_ss(a), _mm_set_ss(H2F(acc[i])))));
  }
}
EMBER_AVX2 void ScaleF16(uint16_t* acc, float s, int n) {
  const __m256 vs = _mm256_set1_ps(s);
  int i = 0;
  for (; i + 8 <= n; i += 8) StoreF16x8(acc + i, _mm256_mul_ps(F16x8(acc + i), vs));
  for (; i < n; ++i) acc[i] = F2H(H2F(acc[i]) * s);
}

}  // namespace ember::kernels::avx2
