// The packed GEMM kernels compiled a second time with SIMDe standing in for the AVX-512 intrinsics
// (EmulatedPackedGemmFn, gemm_builds.h), so gemm_packed_test checks their exact logic on CPUs without
// AVX-512 VNNI too; and the native dispatch's contract.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_packed.h"
#include "kernels/gemm_builds.h"

// After <immintrin.h> (via gemm_packed.h's includes): SIMDe aliases the intrinsics to its portable versions.
#include <immintrin.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

// SIMDe 0.7.4 (Debian 12) has no 512-bit 32-bit arithmetic right shift and no int32 -> float
// conversion; where it emulates AVX-512, each is made of two 256-bit halves (bitwise the same: every
// lane is computed alone).
#if !defined(SIMDE_X86_AVX512F_NATIVE)
static inline simde__m512 EmberEmulatedCvtepi32Ps(simde__m512i a) {
  const simde__m256 lo = simde_mm256_cvtepi32_ps(simde_mm512_castsi512_si256(a));
  const simde__m256 hi = simde_mm256_cvtepi32_ps(simde_mm512_extracti64x4_epi64(a, 1));
  return simde_mm512_insertf32x8(simde_mm512_castps256_ps512(lo), hi, 1);
}
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps(a) EmberEmulatedCvtepi32Ps((a))
static inline simde__m512i EmberEmulatedSrai32(simde__m512i a, int imm) {
  const simde__m256i lo = simde_mm256_srai_epi32(simde_mm512_castsi512_si256(a), imm);
  const simde__m256i hi = simde_mm256_srai_epi32(simde_mm512_extracti64x4_epi64(a, 1), imm);
  return simde_mm512_inserti64x4(simde_mm512_castsi256_si512(lo), hi, 1);
}
#undef _mm512_srai_epi32
#define _mm512_srai_epi32(a, imm) EmberEmulatedSrai32((a), (imm))
#endif

#define EMBER_PACKED_TARGET
namespace ember::kernels::zmm_emulated {
#include "kernels/gemm_packed_util.inc"
#include "kernels/gemm_packed_q32.inc"
#include "kernels/gemm_packed_kquants.inc"
}  // namespace ember::kernels::zmm_emulated

namespace ember::kernels {

PackedGemmFn testing::EmulatedPackedGemmFn(GgmlType type) {
  if (PackedGemmFn f = zmm_emulated::Block32PackedFn(type)) return f;
  return zmm_emulated::KQuantPackedFn(type);
}

namespace {

// Exactly the types with a packed layout have an emulated kernel, and a native one exactly where the
// CPU runs it (so a CPU without AVX-512 VNNI never silently skips a kernel it would run).
TEST(PackedGemmBuilds, DispatchMatchesCpu) {
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    EXPECT_NE(testing::EmulatedPackedGemmFn(t), nullptr) << GgmlTypeName(t);
    EXPECT_EQ(ZmmPackedGemmFn(t) != nullptr, CpuHasAvx512()) << GgmlTypeName(t);
  }
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    EXPECT_EQ(testing::EmulatedPackedGemmFn(t), nullptr) << GgmlTypeName(t);
    EXPECT_EQ(ZmmPackedGemmFn(t), nullptr) << GgmlTypeName(t);
  }
}

}  // namespace
}  // namespace ember::kernels
