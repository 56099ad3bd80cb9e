// The builds of the packed GEMM kernels the tests check, each against the scalar reference: natively
// where this CPU runs AVX-512 VNNI, and under SIMDe on every CPU.
#pragma once

#include <vector>

#include "format/ggml_types.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_packed.h"

namespace ember::kernels::testing {

// gemm_packed_emulated_test.cc: gemm_packed_q32.inc and gemm_packed_kquants.inc under SIMDe.
PackedGemmFn EmulatedPackedGemmFn(GgmlType type);

struct PackedBuild {
  const char* name;
  PackedGemmFn (*fn)(GgmlType);
};

inline std::vector<PackedBuild> PackedBuilds() {
  std::vector<PackedBuild> out;
  if (CpuHasAvx512()) out.push_back({"zmm", ZmmPackedGemmFn});
  out.push_back({"zmm-simde", EmulatedPackedGemmFn});
  return out;
}

}  // namespace ember::kernels::testing
