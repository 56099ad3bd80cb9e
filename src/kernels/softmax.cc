// Softmax of one attention row, in ggml's summation order: exponentials are summed eight at a time
// in f32 (the Hsum tree of avx2_util.h), each group's sum added to a double, then the tail elements
// one by one — ggml_vec_soft_max_f32's AVX2 order. The order depends only on the row's length, so a
// row's result never depends on the batch it was computed in; scalar, AVX2 and AVX-512
// (attention_avx512.inc) agree bitwise.
#include <cmath>
#include <limits>

#include "kernels/attention_avx512.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/exp8_avx2.h"
#include "kernels/ops.h"
#include "kernels/ops_internal.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The maximum of the non-NaN elements (-inf if none). Exact, so any order gives the same value.
float MaxScalar(const float* x, int n) {
  float m = kNegInf;
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// y = exp(x - max), returns their sum in the order described above.
double ExpSumScalar(float* x, float max, int n) {
  double sum = 0.0;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = x[i + l] = ExpF(x[i + l] - max);
    sum += static_cast<double>(Hsum8(v));
  }
  for (; i < n; ++i) sum += static_cast<double>(x[i] = ExpF(x[i] - max));
  return sum;
}

EMBER_AVX2 float MaxAvx2(const float* x, int n) {
  __m256 acc = _mm256_set1_ps(kNegInf);
  int i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(x + i), acc);  // NaN lanes keep acc
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float m = MaxScalar(lanes, 8);
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

EMBER_AVX2 double ExpSumAvx2(float* x, float max, int n) {
  const __m256 vmax = _mm256_set1_ps(max);
  double sum = 0.0;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    _mm256_storeu_ps(x + i, v);
    sum += static_cast<double>(avx2::Hsum(v));
  }
  for (; i < n; ++i) sum += static_cast<double>(x[i] = ExpF(x[i] - max));
  return sum;
}

EMBER_AVX2 void ScaleAvx2(float* x, float s, int n) {
  const __m256 vs = _mm256_set1_ps(s);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

// x * s rounded to fp16 and widened back (RoundToF16, WidenF16), 8 at a time.
EMBER_AVX2 void ScaleToF16Avx2(float* x, float s, int n) {
  const __m256 vs = _mm256_set1_ps(s);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) x[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(x[i] * s), _MM_FROUND_TO_NEAREST_INT)));
}

// x[i] = exp(x[i] - max) and the f32 reciprocal of their sum, in the documented order; false (and
// x all 0) when every entry is -inf. AVX-512 when AttnAvx512Active, else AVX2, else scalar: the same
// bits.
bool ExpAndInverse(float* x, int n, float* inv) {
  const bool zmm = AttnAvx512Active(), simd = CpuHasAvx2();
  const float max = zmm ? avx512_attn::MaxZ(x, n) : simd ? MaxAvx2(x, n) : MaxScalar(x, n);
  if (max == kNegInf) {  // nothing to attend to: all weights 0
    for (int i = 0; i < n; ++i) x[i] = 0.0f;
    return false;
  }
  const double sum = zmm ? avx512_attn::ExpSumZ(x, max, n) : simd ? ExpSumAvx2(x, max, n) : ExpSumScalar(x, max, n);
  *inv = static_cast<float>(1.0 / sum);  // -inf - max -> 0 above
  return true;
}

}  // namespace

void Softmax(float* x, int n) {
  float inv;
  if (!ExpAndInverse(x, n, &inv)) return;
  if (CpuHasAvx2()) {
    ScaleAvx2(x, inv, n);
  } else {
    for (int i = 0; i < n; ++i) x[i] *= inv;
  }
}

void SoftmaxToF16Weights(float* x, int n) {
  float inv;
  if (!ExpAndInverse(x, n, &inv)) return;  // f32(fp16(0)) = 0
  if (CpuHasAvx2()) {
    ScaleToF16Avx2(x, inv, n);
  } else {
    for (int i = 0; i < n; ++i) x[i] = Fp16ToF32(F32ToFp16(x[i] * inv));
  }
}

}  // namespace ember::kernels
