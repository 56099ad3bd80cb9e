// The AVX2 build of the 32-element block GEMM kernels (gemm_q32.inc): vpmaddubsw + int16 adds +
// vpmaddwd as the integer dot.
#include <cstring>

#include "format/quant_tables.h"
#include "kernels/avx2_util.h"
#include "kernels/gemm_kernels.h"

#define EMBER_GEMM_TARGET EMBER_AVX2
#define EMBER_GEMM_VNNI 0
namespace ember::kernels::avx2 {
#include "kernels/gemm_q32.inc"
}  // namespace ember::kernels::avx2
