// Which SIMD kernel sets this CPU runs, each checked once. Internal to kernels/.
#pragma once

namespace ember::kernels {

// AVX2 + FMA + F16C: what every EMBER_AVX2 function (avx2_util.h) is compiled for.
inline bool CpuHasAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok;
}

// The above plus AVX-512 F/BW/VL/VNNI: what every EMBER_AVX512 function (avx512_util.h) is compiled
// for. __builtin_cpu_supports also checks that the OS saves the zmm/mask state (XCR0), so a "yes" means
// the instructions really run.
inline bool CpuHasAvx512() {
  static const bool ok = CpuHasAvx2() && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni");
  return ok;
}

}  // namespace ember::kernels
