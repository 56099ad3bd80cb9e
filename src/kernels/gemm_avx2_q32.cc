// AVX2 GEMM kernels for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (see gemm_kernels.h). Not written yet: no type has one, so MatMul
// uses the row-dot kernels for every row.
#include "kernels/gemm_kernels.h"

namespace ember::kernels::avx2 {

GemmFn Block32GemmFn(GgmlType) { return nullptr; }

}  // namespace ember::kernels::avx2
