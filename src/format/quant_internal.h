// Per-type block codecs behind quant.h's dispatch (quant.cc). Not a public API: callers go through
// Dequantize/Quantize, which validate the type, the element count and (for quantization) that every
// input is finite, so these functions take whole blocks and cannot fail.
//
// Blocks are read and written as little-endian bytes at fixed offsets (never through a struct cast), so
// source rows need no alignment; GGUF and ggml store all multi-byte fields little-endian.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "util/half.h"

namespace ember::quant_internal {

inline float LoadHalf(const uint8_t* p) {
  return Fp16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}
inline void StoreHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}
// Block scales are stored as fp16: a scale beyond fp16's range would store as inf and decode to inf/NaN,
// so quantizers saturate it (the block's largest values then clip) instead. Identity for |v| <= 65504,
// i.e. for every block whose scale ggml could store.
inline float ClampToHalfRange(float v) {
  constexpr float kMaxHalf = 65504.0f;
  return v > kMaxHalf ? kMaxHalf : (v < -kMaxHalf ? -kMaxHalf : v);
}
inline uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void StoreU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// 32-element "legacy" blocks (quant_legacy.cc). Quantizers follow ggml's reference rounding exactly.
void DequantQ4_0(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ4_1(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ5_0(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ5_1(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ8_0(const uint8_t* src, float* dst, size_t nblocks);
void QuantQ4_0(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ4_1(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ5_0(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ5_1(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ8_0(const float* src, uint8_t* dst, size_t nblocks);

// 256-element K-quant super-blocks (quant_kquants.cc). Quantizers use ember's own scale/min search.
void DequantQ4_K(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ5_K(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ6_K(const uint8_t* src, float* dst, size_t nblocks);
void QuantQ4_K(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ5_K(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ6_K(const float* src, uint8_t* dst, size_t nblocks);

// The lower-bit super-blocks (quant_lowbit.cc): q2_K (affine, like q4_K) and q3_K (symmetric, like
// q6_K). Quantizers use the sub-block search below.
void DequantQ2_K(const uint8_t* src, float* dst, size_t nblocks);
void DequantQ3_K(const uint8_t* src, float* dst, size_t nblocks);
void QuantQ2_K(const float* src, uint8_t* dst, size_t nblocks);
void QuantQ3_K(const float* src, uint8_t* dst, size_t nblocks);

// The table-grid formats (quant_iquants.cc): iq4_nl and mxfp4 (32-element blocks), iq4_xs (256).
// Quantizers search a scale per block/sub-block and take the nearest grid value per element.
void DequantIQ4_NL(const uint8_t* src, float* dst, size_t nblocks);
void DequantIQ4_XS(const uint8_t* src, float* dst, size_t nblocks);
void DequantMXFP4(const uint8_t* src, float* dst, size_t nblocks);
void QuantIQ4_NL(const float* src, uint8_t* dst, size_t nblocks);
void QuantIQ4_XS(const float* src, uint8_t* dst, size_t nblocks);
void QuantMXFP4(const float* src, uint8_t* dst, size_t nblocks);

// ---- Sub-block fitting shared by the K-quant quantizers (quant_kquants.cc) ---------------------------

// Nearest integer to v, clamped to [lo, hi]; NaN maps to lo.
inline int RoundClamp(float v, int lo, int hi) {
  if (!(v > static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(v));
}

// Affine fit x ~= scale*L - offset, L in [0, nmax], scale >= 0, offset >= 0 (ggml's K-quant mins are
// subtracted, so the represented range always includes 0).
struct AffineFit {
  float scale = 0.0f;
  float offset = 0.0f;
};
// Codes for `fit` (nearest, clamped) and their squared error (double: finite even for |x| near FLT_MAX).
double AffineAssign(const float* x, int n, int nmax, AffineFit fit, int* L);
// The (scale, offset) search for n <= 32 elements: a sweep of candidate steps, each refit by least
// squares, then Lloyd passes.
AffineFit FitAffine(const float* x, int n, int nmax);
// Codes of the symmetric fit x ~= scale*L, L in [lo, hi], and their squared error for `scale`.
double SymmetricAssign(const float* x, int n, float scale, int lo, int hi, int* L);
// The least-squares symmetric scale for codes in [lo, hi] (lo < 0 < hi): the largest-magnitude element
// swept around code lo and code hi, each candidate refit, then Lloyd passes. 0 for an all-zero input.
float FitSymmetric(const float* x, int n, int lo, int hi);
// The fp16 super-block step for sub-block scales whose largest (signed) value is `max_scale`, coded as
// max_scale/limit. Nearest rounding can shrink a tiny (subnormal) step by up to half an fp16 spacing,
// enough to push the largest code past `limit` and clip it; one spacing away from zero avoids that.
uint16_t SuperBlockStep(float max_scale, float limit);
// Picks an affine sub-block's scale and min codes (0..code_max) against the super-block steps d, dmin:
// the rounded codes first, then their neighbours (ties keep the rounded ones); writes the n <= 32
// element codes for the winner to L.
void CodeSubBlockK(const float* x, int n, int nmax, int code_max, float d, float dmin, AffineFit fit, uint8_t* sc,
                   uint8_t* mn, int* L);

// q4_K/q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0..3 use the low six
// bits of bytes 0..3 (scale) and 4..7 (min); sub-blocks 4..7 keep their low four bits in bytes 8..11
// (scale in the low nibble, min in the high nibble) and their top two bits in the spare top bits of
// bytes 0..3 (scale) and 4..7 (min).
void UnpackScaleMinK4(const uint8_t* packed, int j, int* scale, int* min);
void PackScaleMinK4(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]);

}  // namespace ember::quant_internal
