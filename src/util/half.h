// IEEE half (fp16) and bfloat16 <-> float conversions, bit-exact with ggml's reference behaviour:
// fp16 rounds to nearest even (as F16C does), bf16 rounds to nearest even and keeps NaN quiet.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {

inline float Bits2F(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t F2Bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float Fp16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return Bits2F(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return Bits2F(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return Bits2F(sign);
  // Subnormal half: value = mant * 2^-24, exactly representable as a normal float.
  int e = -1;
  do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
  return Bits2F(sign | ((112u - e) << 23) | ((mant & 0x3ffu) << 13));
}

inline uint16_t F32ToFp16(float f) {
  const uint32_t u = F2Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;                 // NaN stays NaN (quiet)
  if (abs >= 0x477ff000u) return sign | 0x7c00u;                // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                      // below the smallest normal half
    if (abs < 0x33000000u) return sign;                         // < 2^-25: rounds to zero
    const uint32_t e = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;                            // 14..24 bits dropped
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;           // nearest, ties to even
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t q = ((abs >> 13) - (112u << 10));                    // rebias exponent 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;       // carry may roll into the exponent
  return sign | static_cast<uint16_t>(q);
}

inline float Bf16ToF32(uint16_t b) { return Bits2F(static_cast<uint32_t>(b) << 16); }

inline uint16_t F32ToBf16(float f) {
  uint32_t u = F2Bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);  // quiet NaN
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace ember
