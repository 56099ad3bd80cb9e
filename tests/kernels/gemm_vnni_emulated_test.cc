// The VNNI build of the GEMM kernels compiled a second time with SIMDe standing in for the intrinsics
// (EmulatedVnniGemmFn, gemm_builds.h), so gemm_test and gemm_kquant_test check its exact logic on
// CPUs without AVX-512 VNNI; and the native dispatch's contract.
#include <gtest/gtest.h>

#include <cstring>

#include "format/quant_tables.h"
#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_builds.h"
#include "kernels/gemm_kernels.h"

// After <immintrin.h> (via avx2_util.h): SIMDe aliases the intrinsics to its portable versions.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

#define EMBER_GEMM_TARGET
#define EMBER_GEMM_VNNI 1
namespace ember::kernels::vnni_emulated::q32 {
#include "kernels/gemm_q32.inc"
}  // namespace ember::kernels::vnni_emulated::q32
namespace ember::kernels::vnni_emulated::kquants {
#include "kernels/gemm_kquants.inc"
}  // namespace ember::kernels::vnni_emulated::kquants

namespace ember::kernels {

GemmFn testing::EmulatedVnniGemmFn(GgmlType type) {
  if (GemmFn f = vnni_emulated::q32::Block32GemmFn(type)) return f;
  return vnni_emulated::kquants::KQuantGemmFn(type);
}

namespace {

constexpr GgmlType kGemmTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                   GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q4_K,
                                   GgmlType::Q5_K, GgmlType::Q6_K};

// Every type with an AVX2 GEMM has a VNNI one, natively exactly where the CPU runs it (so a CPU
// without VNNI never silently skips a kernel it would run), and under SIMDe always.
TEST(GemmVnni, DispatchMatchesCpu) {
  for (GgmlType t : kGemmTypes) {
    EXPECT_NE(testing::EmulatedVnniGemmFn(t), nullptr) << GgmlTypeName(t);
    if (CpuHasAvx512()) {
      EXPECT_NE(VnniGemmFn(t), nullptr) << GgmlTypeName(t);
    } else {
      EXPECT_EQ(VnniGemmFn(t), nullptr) << GgmlTypeName(t);
    }
  }
  EXPECT_EQ(testing::EmulatedVnniGemmFn(GgmlType::F16), nullptr);
  EXPECT_EQ(VnniGemmFn(GgmlType::F32), nullptr);
}

}  // namespace
}  // namespace ember::kernels
