// Packed GEMM kernels for prefill on AVX-512 VNNI: one 16-row group of a weight in the packed layout
// (repack.h) against a tile of up to kGemmMaxTile tokens in block-major order (gemm_tile.h). Internal
// to kernels/.
//
// The same contract as a GemmFn (gemm_kernels.h): every (row, token) is computed with its type's
// documented operation sequence (dot_kernels.h), so results are bitwise those of the row kernels, the
// 8-row GEMM kernels and the scalar reference, and MatMul may mix all of them. What differs is only the
// data movement: 512-bit vectors hold 16 weight rows (one int32 / f32 lane each), the rows' quants
// arrive already transposed (no shuffles per call), and the per-(block, token) scalars come
// precomputed with the tile.
#pragma once

#include <cstdint>

#include "format/ggml_types.h"
#include "kernels/gemm_tile.h"

namespace ember::kernels {

// Groups per call, at most: two groups share each activation broadcast (a load per two vpdpbusd).
inline constexpr int kPackedMaxGroups = 2;

// out[t * stride + 16 g + r] = dot(row r of group g, token t) for g < groups (1 or 2), r < 16,
// t < n_acts (1 <= n_acts <= kGemmMaxTile); `group` is the first group's first byte in the packed
// copy, group g starts g * group_bytes after it.
using PackedGemmFn = void (*)(const uint8_t* group, size_t group_bytes, int groups, int64_t n_in,
                              const GemmTile& tile, int n_acts, float* out, int64_t stride);

// The native kernel for `type`; nullptr where there is none or when this CPU lacks what CpuHasAvx512
// checks.
PackedGemmFn ZmmPackedGemmFn(GgmlType type);

}  // namespace ember::kernels
