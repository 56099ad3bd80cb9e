// The AVX2 build of the K-quant GEMM kernels (gemm_kquants.inc): vpmaddubsw + int16 adds + vpmaddwd
// by the sub-block scales as the integer dot.
#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/gemm_kernels.h"

#define EMBER_GEMM_TARGET EMBER_AVX2
#define EMBER_GEMM_VNNI 0
namespace ember::kernels::avx2 {
#include "kernels/gemm_kquants.inc"
}  // namespace ember::kernels::avx2
