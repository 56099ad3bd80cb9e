// Multi-row ("GEMM") kernels for prefill: kGemmRows consecutive weight rows against a tile of up to
// kGemmMaxTile tokens. Internal to kernels/.
//
// A GemmFn computes every (row, token) pair with exactly the operation sequence its type's DotFn
// uses (the lane order of dot_kernels.h), so the two are bitwise interchangeable: MatMul may use a
// GemmFn for some rows and tokens and a DotFn for the rest, and batch invariance still holds. What a
// GemmFn changes is only how work is shared: weights are unpacked once per tile of tokens, and the
// integer block sums come out with one lane per weight row, so no per-(row, token) horizontal
// reduction is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"
#include "kernels/act_quant.h"

namespace ember::kernels {

inline constexpr int kGemmRows = 8;       // weight rows per call (one 256-bit f32 lane each)
inline constexpr int kGemmMaxTile = 16;   // tokens per call, at most

// out[t * stride + r] = dot(row r, acts[t]) for r < kGemmRows, t < n_acts (1 <= n_acts <=
// kGemmMaxTile); row r starts at rows + r * row_bytes.
using GemmFn = void (*)(const uint8_t* rows, size_t row_bytes, int64_t n_in, const ActRow* acts, int n_acts,
                        float* out, int64_t stride);

// The AVX2 GEMM kernel for `type`; nullptr where there is none or when this CPU lacks AVX2+FMA+F16C
// (MatMul then uses the DotFn alone).
GemmFn Avx2GemmFn(GgmlType type);

// The same kernels with 256-bit vpdpbusd as the integer dot (gemm_vnni.cc); nullptr where there is
// none or when this CPU lacks what CpuHasAvx512 checks (AVX-512 F/BW/VL/VNNI). Bitwise equal to the
// AVX2 GEMM and the row kernels.
GemmFn VnniGemmFn(GgmlType type);

namespace avx2 {
// gemm_q32.inc via gemm_avx2_q32.cc: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4.
GemmFn Block32GemmFn(GgmlType type);
GemmFn KQuantGemmFn(GgmlType type);   // gemm_kquants.inc via gemm_avx2_kquants.cc: Q4_K, Q5_K, Q6_K
}  // namespace avx2

}  // namespace ember::kernels
