// The AVX-512 target attribute for the row-dot kernels in dot_avx512_*.inc. Internal to kernels/.
//
// AVX-512 is enabled per function (never with -mavx512* flags): an inline function from a shared
// header compiled under such flags could be the copy the linker keeps, and then run on AVX2-only
// CPUs. The .inc files are also compiled by tests/kernels/dot_avx512_test.cc with this macro empty
// and SIMDe standing in for the intrinsics, which is how they are tested on CPUs without AVX-512.
#pragma once

#include <immintrin.h>

#define EMBER_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
