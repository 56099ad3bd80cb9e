// Runtime dispatch to the AVX2 row-dot kernels.
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"

namespace ember::kernels {
namespace avx2 {
DotFn FloatDotFn(GgmlType type);
DotFn Block32DotFn(GgmlType type);
DotFn KQuantDotFn(GgmlType type);
DotFn LowBitDotFn(GgmlType type);
}  // namespace avx2

DotFn Avx2DotFn(GgmlType type) {
  if (!CpuHasAvx2()) return nullptr;
  if (DotFn f = avx2::FloatDotFn(type)) return f;
  if (DotFn f = avx2::Block32DotFn(type)) return f;
  if (DotFn f = avx2::LowBitDotFn(type)) return f;
  return avx2::KQuantDotFn(type);
}

}  // namespace ember::kernels
