// Value tables and scale decoders of the low-bit ggml formats (IQ4_NL, IQ4_XS, MXFP4, Q3_K), shared by
// the codecs in format/ and the dot kernels in kernels/. Plain scalar code (no intrinsics), so the
// SIMDe test builds of the kernels can use it as well.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::quant_tables {

// IQ4_NL / IQ4_XS: a 4-bit code indexes this non-linear int8 grid (ggml's kvalues_iq4nl); the
// element's value is scale * grid[code]. Sorted ascending.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// MXFP4: a 4-bit FP4 (e2m1) code, sign in bit 3, as twice its value (so the grid is integral; ggml's
// kvalues_mxfp4). The element's value is grid[code] * E8M0ToF32Half(e).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), as ggml's GGML_E8M0_TO_FP32_HALF computes it:
// e = 0 and 1 give the f32 subnormals 2^-128 and 2^-127; e = 255 (NaN in the OCP spec) gives 2^127.
inline float E8M0ToF32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint32_t LoadLE32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// Q3_K's 12 scale bytes -> its 16 six-bit sub-block scales (0..63, before the -32), four per 32-bit
// word: sub-block j is byte j % 4 of w[j / 4]. Sub-block j keeps its low four bits in byte j (j < 8: low
// nibble) or byte j - 8 (j >= 8: high nibble), and its top two bits at bit 2 * (j / 4) of byte
// 8 + j % 4. (Words, so SIMD code can move them into a vector without a store.)
inline void Q3KScaleWords(const uint8_t* s, uint32_t w[4]) {
  const uint32_t a0 = LoadLE32(s), a1 = LoadLE32(s + 4), a2 = LoadLE32(s + 8);
  constexpr uint32_t kLow = 0x0f0f0f0fu, kTop = 0x03030303u;
  w[0] = (a0 & kLow) | ((a2 & kTop) << 4);
  w[1] = (a1 & kLow) | (((a2 >> 2) & kTop) << 4);
  w[2] = ((a0 >> 4) & kLow) | (((a2 >> 4) & kTop) << 4);
  w[3] = ((a1 >> 4) & kLow) | (((a2 >> 6) & kTop) << 4);
}

// The same scales minus 32 (-32..31), what multiplies the sub-block.
inline void UnpackQ3KScales(const uint8_t* s, int8_t out[16]) {
  uint32_t w[4];
  Q3KScaleWords(s, w);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int8_t>(static_cast<int>((w[i / 4] >> (8 * (i % 4))) & 0xFF) - 32);
}

// IQ4_XS: sub-block ib's six-bit scale, minus 32 (-32..31): its low four bits are nibble ib % 2 of
// scales_l[ib / 2], its top two bits bits 2ib..2ib+1 of the little-endian u16 scales_h. `blk` points at
// the super-block (f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]).
inline int Iq4xsScale(const uint8_t* blk, int ib) {
  const int scales_h = blk[2] | (blk[3] << 8);
  const int low = (blk[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
  return (low | (((scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

// All eight at once, as the int8 bytes of one little-endian u64 (byte ib = sub-block ib's scale minus
// 32): scales_l read as one word puts sub-block ib's nibble at bit 4ib. (A word, so SIMD code can move
// the scales into a vector without a store.)
inline uint64_t Iq4xsScaleBytes(const uint8_t* blk) {
  const uint32_t h = static_cast<uint32_t>(blk[2]) | (static_cast<uint32_t>(blk[3]) << 8), l = LoadLE32(blk + 4);
  uint64_t out = 0;
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t ls = ((l >> (4 * ib)) & 0xF) | (((h >> (2 * ib)) & 3) << 4);
    out |= static_cast<uint64_t>((ls - 32) & 0xFF) << (8 * ib);
  }
  return out;
}

}  // namespace ember::quant_tables
