// The builds of the GEMM kernels the gemm tests check, each against the scalar reference: the AVX2 and
// VNNI builds (and the packed zmm kernels) natively where this CPU runs them, and the VNNI build and the
// packed kernels under SIMDe on every CPU (so their logic is tested on AVX2-only machines too).
#pragma once

#include <vector>

#include "format/ggml_types.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemm_packed.h"

namespace ember::kernels::testing {

// gemm_vnni_emulated_test.cc: gemm_q32.inc and gemm_kquants.inc with EMBER_GEMM_VNNI 1, under SIMDe.
GemmFn EmulatedVnniGemmFn(GgmlType type);
// gemm_packed_emulated_test.cc: gemm_packed_q32.inc and gemm_packed_kquants.inc under SIMDe.
PackedGemmFn EmulatedPackedGemmFn(GgmlType type);

template <typename Fn>
struct KernelBuild {
  const char* name;
  Fn (*fn)(GgmlType);
};
using GemmBuild = KernelBuild<GemmFn>;
using PackedBuild = KernelBuild<PackedGemmFn>;

inline std::vector<GemmBuild> GemmBuilds() {
  std::vector<GemmBuild> out;
  if (CpuHasAvx2()) out.push_back({"avx2", Avx2GemmFn});
  if (CpuHasAvx512()) out.push_back({"vnni", VnniGemmFn});
  out.push_back({"vnni-simde", EmulatedVnniGemmFn});
  return out;
}

inline std::vector<PackedBuild> PackedBuilds() {
  std::vector<PackedBuild> out;
  if (CpuHasAvx512()) out.push_back({"zmm", ZmmPackedGemmFn});
  out.push_back({"zmm-simde", EmulatedPackedGemmFn});
  return out;
}

}  // namespace ember::kernels::testing
