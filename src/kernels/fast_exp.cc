#include "kernels/fast_exp.h"

#include "kernels/exp8_avx2.h"

namespace ember::kernels {
namespace {

EMBER_AVX2 void ExpArrayAvx2(const float* x, float* y, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ExpF(x[i]);
}

bool HasAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

}  // namespace

void ExpArray(const float* x, float* y, int n) {
  if (HasAvx2()) {
    ExpArrayAvx2(x, y, n);
    return;
  }
  for (int i = 0; i < n; ++i) y[i] = ExpF(x[i]);
}

}  // namespace ember::kernels
