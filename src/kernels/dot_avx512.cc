// The native build of the AVX-512 kernels (dot_avx512_*.inc, AVX-512 enabled per function through
// EMBER_AVX512) and their runtime dispatch.
#include <cmath>
#include <cstring>

#include "format/quant_tables.h"
#include "kernels/avx2_util.h"
#include "kernels/avx512_util.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/kquant_scales.h"

// GCC 12.2's AVX-512 headers fill "don't care" operands with _mm512_undefined_*() (a self-initialised
// variable), which -W(maybe-)uninitialized reports once inlined: a false positive (GCC PR 105593).
// The SIMDe build of the same sources (tests/kernels/dot_avx512_test.cc) keeps these warnings on.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace ember::kernels::avx512 {
#include "kernels/dot_avx512_float.inc"
#include "kernels/dot_avx512_q32.inc"
#include "kernels/dot_avx512_kquants.inc"
#include "kernels/dot_avx512_lowbit.inc"
}  // namespace ember::kernels::avx512
#pragma GCC diagnostic pop

namespace ember::kernels {

DotFn Avx512DotFn(GgmlType type) {
  if (!CpuHasAvx512()) return nullptr;
  if (DotFn f = avx512::FloatDotFn(type)) return f;
  if (DotFn f = avx512::KQuantDotFn(type)) return f;
  if (DotFn f = avx512::lowbit::LowBitDotFn(type)) return f;
  return avx512::Block32DotFn(type);
}

}  // namespace ember::kernels
