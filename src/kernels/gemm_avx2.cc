// Runtime dispatch to the AVX2 GEMM kernels.
#include "kernels/cpu_features.h"
#include "kernels/gemm_kernels.h"

namespace ember::kernels {

GemmFn Avx2GemmFn(GgmlType type) {
  if (!CpuHasAvx2()) return nullptr;
  if (GemmFn f = avx2::Block32GemmFn(type)) return f;
  return avx2::KQuantGemmFn(type);
}

}  // namespace ember::kernels
