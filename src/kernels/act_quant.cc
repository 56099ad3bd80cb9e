#include "kernels/act_quant.h"

#include <cmath>

#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

constexpr int kQ32 = 32;
constexpr int kQK = 256;

// ggml's x86 quantize_row_q8_0/q8_1: q = round-half-even(x * (127 / amax)) (_mm256_round_ps), which can
// differ from the scalar reference's roundf(x / d) on ties; we follow the x86 build llama.cpp runs.
void QuantizeBlock32(const float* x, bool with_s, int8_t* q, float* d, float* s, int32_t* sum) {
  float amax = 0.0f;
  for (int j = 0; j < kQ32; ++j) {
    const float ax = std::fabs(x[j]);
    amax = ax > amax ? ax : amax;  // NaN never wins (as fmax); inlined, unlike std::fmax here
  }
  const float dd = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int32_t total = 0;
  for (int j = 0; j < kQ32; ++j) {
    q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
    total += q[j];
  }
  *d = Fp16ToF32(F32ToFp16(dd));
  *sum = total;
  if (with_s) *s = Fp16ToF32(F32ToFp16(dd * static_cast<float>(total)));
}

// QuantizeBlock32 on AVX2, bitwise the same: the max of exact |x| values is order-free, x * id is the
// same f32 product, and _mm256_round_ps to nearest is nearbyint in the default rounding mode.
EMBER_AVX2 void QuantizeBlock32Avx2(const float* x, bool with_s, int8_t* q, float* d, float* s, int32_t* sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    acc = _mm256_max_ps(_mm256_andnot_ps(sign, v[k]), acc);  // a NaN lane keeps acc
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float amax = 0.0f;
  for (float l : lanes) amax = l > amax ? l : amax;
  const float dd = amax / 127.0f;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  __m256i i[4];
  for (int k = 0; k < 4; ++k) {
    i[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const int32_t total = avx2::HsumI32(_mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3])));
  // |q| <= 127, so the saturating packs are exact; they interleave 128-bit lanes, the permute undoes it.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  *d = Fp16ToF32(F32ToFp16(dd));
  *sum = total;
  if (with_s) *s = Fp16ToF32(F32ToFp16(dd * static_cast<float>(total)));
}

// ggml's quantize_row_q8_K_ref: the signed value of largest magnitude (first one on ties) maps to -127.
void QuantizeBlockK(const float* x, int8_t* q, float* d, int32_t* sums) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) { amax = ax; max = x[j]; }
  }
  if (amax == 0.0f) {
    *d = 0.0f;
    for (int j = 0; j < kQK; ++j) q[j] = 0;
    for (int j = 0; j < kQK / 16; ++j) sums[j] = 0;
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < kQK; ++j) {
    const int v = static_cast<int>(std::nearbyint(iscale * x[j]));  // ggml's nearest_int: half to even
    q[j] = static_cast<int8_t>(v < 127 ? v : 127);
  }
  for (int j = 0; j < kQK / 16; ++j) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) s += q[j * 16 + i];
    sums[j] = s;
  }
  *d = 1.0f / iscale;
}

// QuantizeBlockK on AVX2, bitwise the same: the magnitude maximum is order-free (max_ps skips a NaN
// lane like the scalar `>`), the first element attaining it is found by comparison, iscale * x is the
// same f32 product and cvtps rounds half to even as nearbyint does, and the narrowing keeps the low
// byte of the clamped int32 as static_cast<int8_t> does (also for the indefinite value a NaN gives).
EMBER_AVX2 void QuantizeBlockKAvx2(const float* x, int8_t* q, float* d, int32_t* sums) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < kQK; k += 8) acc = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float amax = 0.0f;
  for (float l : lanes) amax = l > amax ? l : amax;
  if (amax == 0.0f) {
    QuantizeBlockK(x, q, d, sums);  // all zero (or NaN): the scalar path's early exit
    return;
  }
  int first = 0;
  for (int k = 0; k < kQK; k += 8) {
    const __m256 eq = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
    if (const int m = _mm256_movemask_ps(eq); m != 0) {
      first = k + __builtin_ctz(static_cast<unsigned>(m));
      break;
    }
  }
  const float iscale = -127.0f / x[first];
  const __m256 is = _mm256_set1_ps(iscale);
  const __m256i lim = _mm256_set1_epi32(127), low = _mm256_set1_epi32(0xFF);
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int k = 0; k < kQK; k += 32) {
    __m256i v[4];
    for (int i = 0; i < 4; ++i) {
      const __m256i n = _mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(x + k + 8 * i)));
      v[i] = _mm256_and_si256(_mm256_min_epi32(n, lim), low);  // 0..255: the unsigned packs below are exact
    }
    const __m256i packed = _mm256_packus_epi16(_mm256_packus_epi32(v[0], v[1]), _mm256_packus_epi32(v[2], v[3]));
    const __m256i qv = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k), qv);
    // Sums of the two 16-byte groups: pairs, then fours, then lanes 0..3 and 4..7.
    const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, qv), ones16);
    const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(s4, s4), _mm256_hadd_epi32(s4, s4));
    sums[k / 16] = _mm256_cvtsi256_si32(s);
    sums[k / 16 + 1] = _mm256_extract_epi32(s, 4);
  }
  *d = 1.0f / iscale;
}

}  // namespace

DotType DotTypeOf(GgmlType t) {
  switch (t) {
    case GgmlType::F16: return DotType::kF16;
    case GgmlType::BF16: return DotType::kBF16;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4: return DotType::kQ8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return DotType::kQ8_1;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS: return DotType::kQ8_K;
    default: return DotType::kF32;
  }
}

void ActBatch::Resize(DotType type, int64_t n_tok, int64_t n_in) {
  type_ = type;
  n_in_ = n_in;
  const bool k = type == DotType::kQ8_K;
  const bool quant = type == DotType::kQ8_0 || type == DotType::kQ8_1 || k;
  blocks_ = quant ? n_in / (k ? kQK : kQ32) : 0;
  sums_ = k ? n_in / 16 : blocks_;
  const size_t n = static_cast<size_t>(n_tok);
  // resize() never shrinks capacity: a long-lived ActBatch stops allocating after the first prefill.
  f_.resize(quant ? 0 : n * n_in);
  q_.resize(quant ? n * n_in : 0);
  d_.resize(n * blocks_);
  s_.resize(type == DotType::kQ8_1 ? n * blocks_ : 0);
  sum_.resize(n * sums_);
}

void ActBatch::ConvertRows(const float* x, int64_t t0, int64_t t1) {
  const auto quantize32 = CpuHasAvx2() ? QuantizeBlock32Avx2 : QuantizeBlock32;
  const auto quantizek = CpuHasAvx2() ? QuantizeBlockKAvx2 : QuantizeBlockK;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xr = x + t * n_in_;
    switch (type_) {
      case DotType::kF32:
        for (int64_t i = 0; i < n_in_; ++i) f_[t * n_in_ + i] = xr[i];
        break;
      case DotType::kF16:
        for (int64_t i = 0; i < n_in_; ++i) f_[t * n_in_ + i] = Fp16ToF32(F32ToFp16(xr[i]));
        break;
      case DotType::kBF16:
        for (int64_t i = 0; i < n_in_; ++i) f_[t * n_in_ + i] = Bf16ToF32(F32ToBf16(xr[i]));
        break;
      case DotType::kQ8_0:
      case DotType::kQ8_1:
        for (int64_t b = 0; b < blocks_; ++b) {
          const int64_t i = t * blocks_ + b;
          quantize32(xr + b * kQ32, type_ == DotType::kQ8_1, &q_[t * n_in_ + b * kQ32], &d_[i],
                     type_ == DotType::kQ8_1 ? &s_[i] : nullptr, &sum_[i]);
        }
        break;
      case DotType::kQ8_K:
        for (int64_t b = 0; b < blocks_; ++b) {
          quantizek(xr + b * kQK, &q_[t * n_in_ + b * kQK], &d_[t * blocks_ + b], &sum_[t * sums_ + b * (kQK / 16)]);
        }
        break;
    }
  }
}

void ActBatch::Convert(DotType type, const float* x, int64_t n_tok, int64_t n_in) {
  Resize(type, n_tok, n_in);
  ConvertRows(x, 0, n_tok);
}

ActRow ActBatch::Row(int64_t t) const {
  ActRow r;
  if (!f_.empty()) r.f = f_.data() + t * n_in_;
  if (!q_.empty()) r.q = q_.data() + t * n_in_;
  if (!d_.empty()) r.d = d_.data() + t * blocks_;
  if (!s_.empty()) r.s = s_.data() + t * blocks_;
  if (!sum_.empty()) r.sum = sum_.data() + t * sums_;
  return r;
}

}  // namespace ember::kernels
