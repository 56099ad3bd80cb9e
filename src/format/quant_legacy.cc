// The 32-element ggml block types: q4_0, q4_1, q5_0, q5_1, q8_0.
//
// Layouts (bytes): q4_0 {f16 d; u8 qs[16]}, q4_1 {f16 d; f16 m; u8 qs[16]}, q5_0 {f16 d; u8 qh[4];
// u8 qs[16]}, q5_1 {f16 d; f16 m; u8 qh[4]; u8 qs[16]}, q8_0 {f16 d; i8 qs[32]}.
// In the nibble types byte j holds element j in its low nibble and element j+16 in its high nibble; the
// 5-bit types keep element e's fifth bit in bit e of the little-endian u32 qh.
//
// The quantizers reproduce ggml's reference rounding (scale from the block's extreme, id = 1/d computed
// from the unrounded d, truncating casts with +0.5 / +8.5 / +16.5 offsets): byte-identical to ggml's
// quantize_row_*_ref for every block whose scale (and q*_1 minimum) fits fp16. Beyond that (|x| past
// ~6.5e4 to ~8e6, by type) ggml stores inf; ember saturates at 65504 and clips (ClampToHalfRange).
#include <algorithm>
#include <cmath>

#include "format/quant_internal.h"

namespace ember::quant_internal {
namespace {

constexpr size_t kQK = 32;

// (int)v for v in [0, hi], saturating outside it. Same result as ggml's MIN(hi, (int8_t)v) for every v
// ggml can produce, without the undefined float->int8 conversion when v is out of range.
int TruncClamp(float v, int hi) {
  if (!(v > 0.0f)) return 0;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

// The element with the largest magnitude, sign kept (the first one on ties, as ggml picks).
float SignedAbsMax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, float* lo, float* hi) {
  *lo = x[0];
  *hi = x[0];
  for (size_t j = 1; j < kQK; ++j) {
    *lo = std::min(*lo, x[j]);
    *hi = std::max(*hi, x[j]);
  }
}

// Packs 32 codes (0..15 or 0..31) into 16 nibble bytes plus, when qh is non-null, the fifth bits.
void PackNibbles(const int* codes, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const int lo = codes[j], hi = codes[j + kQK / 2];
    qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
    high |= static_cast<uint32_t>((lo >> 4) & 1) << j;
    high |= static_cast<uint32_t>((hi >> 4) & 1) << (j + kQK / 2);
  }
  if (qh != nullptr) StoreU32(qh, high);
}

// Element e's 4-bit code from the nibble bytes.
inline int Nibble(const uint8_t* qs, size_t e) {
  return e < kQK / 2 ? (qs[e] & 0xF) : (qs[e - kQK / 2] >> 4);
}

}  // namespace

void DequantQ4_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 18, dst += kQK) {
    const float d = LoadHalf(src);
    for (size_t e = 0; e < kQK; ++e) dst[e] = static_cast<float>(Nibble(src + 2, e) - 8) * d;
  }
}

void DequantQ4_1(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 20, dst += kQK) {
    const float d = LoadHalf(src), m = LoadHalf(src + 2);
    for (size_t e = 0; e < kQK; ++e) dst[e] = static_cast<float>(Nibble(src + 4, e)) * d + m;
  }
}

void DequantQ5_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 22, dst += kQK) {
    const float d = LoadHalf(src);
    const uint32_t qh = LoadU32(src + 2);
    for (size_t e = 0; e < kQK; ++e) {
      const int q = Nibble(src + 6, e) | static_cast<int>(((qh >> e) & 1) << 4);
      dst[e] = static_cast<float>(q - 16) * d;
    }
  }
}

void DequantQ5_1(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 24, dst += kQK) {
    const float d = LoadHalf(src), m = LoadHalf(src + 2);
    const uint32_t qh = LoadU32(src + 4);
    for (size_t e = 0; e < kQK; ++e) {
      const int q = Nibble(src + 8, e) | static_cast<int>(((qh >> e) & 1) << 4);
      dst[e] = static_cast<float>(q) * d + m;
    }
  }
}

void DequantQ8_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 34, dst += kQK) {
    const float d = LoadHalf(src);
    for (size_t e = 0; e < kQK; ++e) dst[e] = static_cast<float>(static_cast<int8_t>(src[2 + e])) * d;
  }
}

// Symmetric nibble types: the largest-magnitude element maps to code 0 (value -half*d), so d carries
// that element's sign and the opposite extreme may clip to code 2*half-1.
static void QuantSymmetric(const float* x, uint8_t* dst, int half, bool five_bit) {
  const float d = ClampToHalfRange(SignedAbsMax(x) / static_cast<float>(-half));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float offset = static_cast<float>(half) + 0.5f;
  int codes[kQK];
  for (size_t j = 0; j < kQK; ++j) codes[j] = TruncClamp(x[j] * id + offset, 2 * half - 1);
  StoreHalf(dst, F32ToFp16(d));
  if (five_bit) {
    PackNibbles(codes, dst + 6, dst + 2);
  } else {
    PackNibbles(codes, dst + 2, nullptr);
  }
}

// Affine nibble types: value = code*d + m with m the block minimum and d spanning min..max.
static void QuantAffine(const float* x, uint8_t* dst, int levels, bool five_bit) {
  float lo, hi;
  MinMax(x, &lo, &hi);
  const float m = ClampToHalfRange(lo);
  const float d = ClampToHalfRange((hi - m) / static_cast<float>(levels - 1));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int codes[kQK];
  for (size_t j = 0; j < kQK; ++j) codes[j] = TruncClamp((x[j] - m) * id + 0.5f, levels - 1);
  StoreHalf(dst, F32ToFp16(d));
  StoreHalf(dst + 2, F32ToFp16(m));
  if (five_bit) {
    PackNibbles(codes, dst + 8, dst + 4);
  } else {
    PackNibbles(codes, dst + 4, nullptr);
  }
}

void QuantQ4_0(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantSymmetric(src + b * kQK, dst + b * 18, 8, false);
}

void QuantQ4_1(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantAffine(src + b * kQK, dst + b * 20, 16, false);
}

void QuantQ5_0(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantSymmetric(src + b * kQK, dst + b * 22, 16, true);
}

void QuantQ5_1(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantAffine(src + b * kQK, dst + b * 24, 32, true);
}

// q8_0: d = amax/127, q = round-half-away(x/d); |x/d| <= 127 up to one rounding step unless d saturated,
// so the clamp only matters for blocks beyond fp16's range.
void QuantQ8_0(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += kQK, dst += 34) {
    float amax = 0.0f;
    for (size_t j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = ClampToHalfRange(amax / 127.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreHalf(dst, F32ToFp16(d));
    for (size_t j = 0; j < kQK; ++j) {
      const float q = std::clamp(std::round(src[j] * id), -127.0f, 127.0f);
      dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

}  // namespace ember::quant_internal
