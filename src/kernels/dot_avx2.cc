// Runtime dispatch to the AVX2 row-dot kernels.
#include "kernels/dot_kernels.h"

namespace ember::kernels {
namespace avx2 {
DotFn FloatDotFn(GgmlType type);
DotFn Block32DotFn(GgmlType type);
DotFn KQuantDotFn(GgmlType type);
}  // namespace avx2

namespace {
bool CpuHasAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok;
}
}  // namespace

DotFn Avx2DotFn(GgmlType type) {
  if (!CpuHasAvx2()) return nullptr;
  if (DotFn f = avx2::FloatDotFn(type)) return f;
  if (DotFn f = avx2::Block32DotFn(type)) return f;
  return avx2::KQuantDotFn(type);
}

}  // namespace ember::kernels
