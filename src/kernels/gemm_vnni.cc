// The AVX-512 VL+VNNI build of the GEMM kernels (gemm_q32.inc, gemm_kquants.inc): the same 8-row x
// 16-token kernels with 256-bit vpdpbusd as the integer dot, and their runtime dispatch. Integer block
// sums are exact either way, so these are bitwise equal to the AVX2 GEMM and the row kernels.
#include <cstring>

#include "format/quant_tables.h"
#include "kernels/avx2_util.h"
#include "kernels/avx512_util.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_kernels.h"

#define EMBER_GEMM_TARGET EMBER_AVX512
#define EMBER_GEMM_VNNI 1
// One namespace per .inc: each has its own internal helpers (Bcast32, kVnni, ...).
namespace ember::kernels::vnni::q32 {
#include "kernels/gemm_q32.inc"
}  // namespace ember::kernels::vnni::q32
namespace ember::kernels::vnni::kquants {
#include "kernels/gemm_kquants.inc"
}  // namespace ember::kernels::vnni::kquants

namespace ember::kernels {

GemmFn VnniGemmFn(GgmlType type) {
  if (!CpuHasAvx512()) return nullptr;
  if (GemmFn f = vnni::q32::Block32GemmFn(type)) return f;
  return vnni::kquants::KQuantGemmFn(type);
}

}  // namespace ember::kernels
