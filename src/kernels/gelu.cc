#include "kernels/gelu.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "util/half.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace ember::kernels {
namespace {

// Round to nearest even, as util/half.h (F16C when the build has it: the same result, faster).
inline uint16_t ToHalf(float x) {
#if defined(__F16C__)
  return _cvtss_sh(x, 0);
#else
  return F32ToFp16(x);
#endif
}

const std::vector<uint16_t>& GeluTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(1 << 16);
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = F32ToFp16(GeluTanhF32(Fp16ToF32(static_cast<uint16_t>(i))));
    return t;
  }();
  return table;
}

}  // namespace

float GeluTanhF32(float x) {
  constexpr float kA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
}

void GeluMul(const float* gate, const float* up, float* out, int n) {
  const uint16_t* table = GeluTable().data();
  for (int i = 0; i < n; ++i) {
    const float x = gate[i];
    if (x <= -10.0f) {
      out[i] = 0.0f;
    } else if (x >= 10.0f) {
      out[i] = x * up[i];
    } else {
      out[i] = Fp16ToF32(table[ToHalf(x)]) * up[i];
    }
  }
}

void TanhSoftCap(float* x, float cap, int n) {
  const float inv = 1.0f / cap;
  for (int i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

}  // namespace ember::kernels
