// The builds of the GEMM kernels the gemm tests check, each against the scalar reference: the AVX2 and
// VNNI builds natively where this CPU runs them, and the VNNI build under SIMDe on every CPU (so the
// VNNI kernels' logic is tested on AVX2-only machines too).
#pragma once

#include <vector>

#include "format/ggml_types.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_kernels.h"

namespace ember::kernels::testing {

// gemm_vnni_emulated_test.cc: gemm_q32.inc and gemm_kquants.inc with EMBER_GEMM_VNNI 1, under SIMDe.
GemmFn EmulatedVnniGemmFn(GgmlType type);

struct GemmBuild {
  const char* name;
  GemmFn (*fn)(GgmlType);
};

inline std::vector<GemmBuild> GemmBuilds() {
  std::vector<GemmBuild> out;
  if (CpuHasAvx2()) out.push_back({"avx2", Avx2GemmFn});
  if (CpuHasAvx512()) out.push_back({"vnni", VnniGemmFn});
  out.push_back({"vnni-simde", EmulatedVnniGemmFn});
  return out;
}

}  // namespace ember::kernels::testing
