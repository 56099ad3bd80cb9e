// Runtime dispatch to the AVX-512 row-dot kernels (dot_avx512_*.inc).
#include "kernels/dot_kernels.h"

namespace ember::kernels {
namespace avx512 {
DotFn FloatDotFn(GgmlType type);
DotFn Block32DotFn(GgmlType type);
}  // namespace avx512

namespace {
// Every feature EMBER_AVX512 compiles for (avx512_util.h). __builtin_cpu_supports also checks that
// the OS saves the zmm/mask state (XCR0), so a "yes" means the instructions really run.
bool CpuHasAvx512() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni");
  return ok;
}
}  // namespace

DotFn Avx512DotFn(GgmlType type) {
  if (!CpuHasAvx512()) return nullptr;
  if (DotFn f = avx512::FloatDotFn(type)) return f;
  return avx512::Block32DotFn(type);  // no K-quant kernels: nullptr, the caller falls back to AVX2
}

}  // namespace ember::kernels
