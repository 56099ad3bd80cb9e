// Scalar unpacking of the Q4_K / Q5_K scale bytes, shared by the AVX2 and AVX-512 row kernels (no
// intrinsics, so the SIMDe test builds of those kernels use it too). Internal to kernels/.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::kernels {

// The 12 scale bytes of Q4_K/Q5_K -> 8 six-bit scales (bytes of sc) and 8 six-bit mins (bytes of
// mn), ggml's get_scale_min_k4 layout done four bytes at a time: sub-blocks 0..3 keep the low 6 bits
// of bytes 0..3 (scales) and 4..7 (mins); 4..7 take a nibble of bytes 8..11 plus the top 2 bits of
// bytes 0..3 / 4..7.
inline void ScalesMinsK4(const uint8_t* s, uint64_t* sc, uint64_t* mn) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  const uint32_t sc_lo = w0 & 0x3f3f3f3fu, mn_lo = w1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u);
  *sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *mn = mn_lo | (static_cast<uint64_t>(mn_hi) << 32);
}

}  // namespace ember::kernels
