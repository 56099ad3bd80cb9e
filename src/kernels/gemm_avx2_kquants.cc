// AVX2 GEMM kernels for Q4_K, Q5_K, Q6_K (see gemm_kernels.h). Not written yet: no type has one, so MatMul
// uses the row-dot kernels for every row.
#include "kernels/gemm_kernels.h"

namespace ember::kernels::avx2 {

GemmFn KQuantGemmFn(GgmlType) { return nullptr; }

}  // namespace ember::kernels::avx2
