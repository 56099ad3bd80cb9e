// exp(x) in f32 for softmax and SiLU: range reduction x = n ln2 + r (two-constant Cody-Waite split),
// a degree-7 Taylor polynomial in Horner form on |r| <= ln2/2, then scaling by 2^n through the
// exponent bits. Error <= ~2 ulp against the exact value (tested). Inputs below -87.33 give 0 (no
// subnormal results), above 88.37 give +inf, NaN stays NaN.
//
// The scalar and AVX2 versions run the same operations in the same order (mul, round-half-even,
// FMAs, exponent add), so they agree bitwise and a row's result never depends on where an element
// falls relative to the 8-wide chunks. ggml's own vector expf is a different approximation, so
// values can differ from llama.cpp's in the last bit or two (the exp is not part of the dot types).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ember::kernels {

namespace exp_consts {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693145751953125f;         // few mantissa bits: n * kLn2Hi is exact
inline constexpr float kLn2Lo = 1.428606765330187045e-06f;  // ln 2 - kLn2Hi
inline constexpr float kMax = 88.37f;                        // keeps n <= 127
inline constexpr float kMin = -87.33f;                       // keeps n >= -126 (normal scale)
inline constexpr float kC[8] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
}  // namespace exp_consts

inline float ExpF(float x) {
  using namespace exp_consts;
  if (x != x) return x;
  if (x > kMax) return std::numeric_limits<float>::infinity();
  if (x < kMin) return 0.0f;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = std::fma(kC[7], r, kC[6]);
  for (int k = 5; k >= 0; --k) p = std::fma(p, r, kC[k]);
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

// y[i] = ExpF(x[i]); AVX2 when available, bitwise equal either way. In place ok.
void ExpArray(const float* x, float* y, int n);

}  // namespace ember::kernels
