// Per-type block codecs behind quant.h's dispatch (quant.cc). Not a public API: callers go through
// Dequantize/Quantize, which validate the type, the element count and (for quantization) that every
// input is finite, so these functions take whole blocks and cannot fail.
//
// Blocks are read and written as little-endian bytes at fixed offsets (never through a struct cast), so
// source rows need no alignment; GGUF and ggml store all multi-byte fields little-endian.
#pragma once

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

// q4_K/q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0..3 use the low six
// bits of bytes 0..3 (scale) and 4..7 (min); sub-blocks 4..7 keep their low four bits in bytes 8..11
// (scale in the low nibble, min in the high nibble) and their top two bits in the spare top bits of
// bytes 0..3 (scale) and 4..7 (min).
void UnpackScaleMinK4(const uint8_t* packed, int j, int* scale, int* min);
void PackScaleMinK4(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]);

}  // namespace ember::quant_internal
