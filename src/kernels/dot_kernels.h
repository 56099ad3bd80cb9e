// Row-dot kernels: one weight row against up to kMaxTile activation rows. Internal to kernels/.
//
// The fixed operation order that makes every path bitwise identical (and batch invariant):
//  * F32/F16/BF16: element i goes to lane (i % 32) of 32 f32 accumulators (4 vectors x 8), updated
//    by FMA in index order; the row is zero-padded to a multiple of 32. Then v = (a0+a1)+(a2+a3)
//    lane-wise and Hsum8(v).
//  * 32-element quant blocks (Q8_0, Q4_0/1, Q5_0/1, IQ4_NL, MXFP4): the exact integer dot of block b
//    goes to lane b % 8 of 8 accumulators: acc = fma(dw*dx, float(isum), acc) [then acc = fma(m, s, acc)
//    for Q4_1/Q5_1], blocks zero-padded to a multiple of 8 (padding lanes see fma(0, 0, acc)). Then
//    Hsum8(acc). dw is the fp16 d, for MXFP4 the E8M0 scale halved (its grid is twice the FP4 values);
//    IQ4_NL/MXFP4's integer weights are their grid values.
//  * K-quants and IQ4_XS (256-element super-blocks): one scalar accumulator per token, per super-block
//    acc = fma(dw*dy, float(isum), acc) [then acc = fma(-(dmin*dy), float(msum), acc) for Q2_K/Q4_K/Q5_K],
//    isum = Σ_j scale_j · (Σ q·x over sub-block j), msum = Σ_j min_j · (Σ x over sub-block j).
// Hsum8(v) = ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)), the AVX extract/movehl/shuffle sequence.
// Integer block sums are exact, so their internal order is free.
#pragma once

#include <cstdint>

#include "format/ggml_types.h"
#include "kernels/act_quant.h"

namespace ember::kernels {

// Tokens per tile. Each kernel's per-token operation sequence is independent of the tile it is in, so
// this is only a speed knob. Measured on Zen 3: 8 is no faster than 4 for the 32-element block
// types (register spills eat what the shared weight unpacking saves).
inline constexpr int kMaxTile = 4;

// out[j * stride] = dot(row, acts[j]) for j < n_acts (1 <= n_acts <= kMaxTile). The stride lets a
// kernel store straight into the token-major result matrix.
using DotFn = void (*)(const uint8_t* row, int64_t n_in, const ActRow* acts, int n_acts, float* out,
                       int64_t stride);

// Scalar implementation; nullptr for types MatMul does not support.
DotFn ReferenceDotFn(GgmlType type);
// AVX2+FMA+F16C implementation (compiled with target attributes); nullptr where there is none, or
// when this CPU lacks the features.
DotFn Avx2DotFn(GgmlType type);
// AVX-512 F+BW+VL+VNNI implementation; nullptr for Q6_K (which uses its AVX2 kernel), or when this CPU
// lacks any of those features (or AVX2/FMA/F16C).
DotFn Avx512DotFn(GgmlType type);

// Kernel tiers, lowest first. MatMul uses the highest one that has a kernel for the weight type,
// that this CPU runs, and that is <= the ceiling set by the environment variable
// EMBER_KERNELS=scalar|avx2|avx512 (read once; unset or unrecognised: no ceiling).
enum class KernelTier { kScalar, kAvx2, kAvx512 };
// EMBER_KERNELS's value -> ceiling; nullptr or an unknown value -> kAvx512 (no ceiling).
KernelTier ParseKernelCeiling(const char* value);
// The process's ceiling: EMBER_KERNELS parsed on first use (an unknown value is reported once and
// ignored). Every kernel family (matmul, attention) reads it here.
KernelTier KernelCeiling();
// The kernel for `type` under `ceiling` (never nullptr for a type MatMul supports); *tier, when
// given, receives the tier it belongs to.
DotFn SelectDotFn(GgmlType type, KernelTier ceiling, KernelTier* tier = nullptr);

// The reduction order shared by all paths.
inline float Hsum8(const float* v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

}  // namespace ember::kernels
