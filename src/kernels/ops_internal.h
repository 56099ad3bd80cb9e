// The two implementations behind ops.h's attention primitives, exposed for tests that check they
// agree bitwise. Internal to kernels/. The avx2:: ones require AVX2+FMA+F16C (CpuHasAvx2, cpu_features.h).
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace ember::kernels {

#define EMBER_OPS_DECLS                                              \
  void RoundToF16(const float* src, uint16_t* dst, int n);           \
  float DotF16F16(const uint16_t* a, const uint16_t* b, int n);      \
  float DotF16(const uint16_t* k, const float* q, int n);            \
  float DotF32(const float* a, const float* b, int n);               \
  void AxpyF16(float a, const uint16_t* v, float* out, int n);       \
  void AxpyF32(float a, const float* v, float* out, int n);         \
  void MadF16(float a, const uint16_t* v, uint16_t* acc, int n);   \
  void ScaleF16(uint16_t* acc, float s, int n);

namespace scalar { EMBER_OPS_DECLS }
namespace avx2 { EMBER_OPS_DECLS }
#undef EMBER_OPS_DECLS


}  // namespace ember::kernels
