// The native build of the packed GEMM kernels (gemm_packed_q32.inc, gemm_packed_kquants.inc: AVX-512
// F/BW/VL/VNNI on 512-bit vectors) and their dispatch.
#include "kernels/gemm_packed.h"

#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/avx512_util.h"
#include "kernels/cpu_features.h"

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own "don't care" operands once
// inlined (GCC PR 105593; see dot_avx512.cc).
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define EMBER_PACKED_TARGET EMBER_AVX512
namespace ember::kernels::zmm {
#include "kernels/gemm_packed_util.inc"
#include "kernels/gemm_packed_q32.inc"
#include "kernels/gemm_packed_kquants.inc"
}  // namespace ember::kernels::zmm
#pragma GCC diagnostic pop

namespace ember::kernels {

PackedGemmFn ZmmPackedGemmFn(GgmlType type) {
  if (!CpuHasAvx512()) return nullptr;
  if (PackedGemmFn f = zmm::Block32PackedFn(type)) return f;
  return zmm::KQuantPackedFn(type);
}

}  // namespace ember::kernels
