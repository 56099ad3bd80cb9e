// The 16-row packed weight layout the zmm GEMM kernels read (gemm_packed.h). Internal to kernels/ and to
// PackedWeights (packed_weights.h), which makes the copies at load.
//
// A weight's rows are taken in groups of kPackRows; group g holds, for every block b of the row, the 16
// rows' block b side by side, at g * (n_blocks * kPackRows * block_bytes) + b * kPackRows * block_bytes.
// Inside such a group block every field of the ggml block is laid out for a 512-bit load:
//  * an fp16 field (a scale): the 16 rows' values in row order, 32 bytes;
//  * a byte field (quants, packed scales): one 64-byte vector per 4 bytes of the field, whose 32-bit
//    lane r is those 4 bytes of row r — exactly what the kernels otherwise build with a transpose.
// Nothing is decoded or converted, so a packed copy has the byte size of the rows it covers and can be
// checked against its source byte for byte (UnpackGroupRow). The last n_out % 16 rows of a weight are
// not packed: MatMul reads them from the original rows.
//
// Field order per type (offsets inside a group block):
//   Q4_0  (288 B): d | qs as 4 vectors
//   Q8_0  (544 B): d | qs as 8 vectors
//   Q4_K (2304 B): d | dmin | scales as 3 vectors | qs as 32 vectors (8 per 32-byte chunk)
//   Q5_K (2816 B): d | dmin | scales as 3 vectors | qh as 8 vectors | qs as 32 vectors
//   Q6_K (3360 B): d | scales as 4 vectors | ql as 32 vectors | qh as 16 vectors
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"
#include "kernels/matmul.h"

namespace ember::kernels {

inline constexpr int kPackRows = 16;

// Whether `type` has a packed layout (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K).
bool HasPackedLayout(GgmlType type);

// Bytes of one group block: kPackRows * the type's block bytes.
size_t PackedGroupBlockBytes(GgmlType type);

// Full 16-row groups of w, and the bytes of its packed copy (0 for a type without a layout).
int64_t PackedGroups(const WeightView& w);
uint64_t PackedBytes(const WeightView& w);

// Writes groups [g0, g1) of w's packed copy to dst, which points at the copy's start (PackedBytes(w)
// bytes). Groups are independent: threads may write disjoint ranges.
void PackGroups(const WeightView& w, int64_t g0, int64_t g1, uint8_t* dst);

// Row `row` (< PackedGroups(w) * 16) of a packed copy back in its ggml layout (RowBytes bytes to out).
// For tests and checks: packing is exactly a permutation of bytes.
void UnpackRow(const WeightView& w, const uint8_t* packed, int64_t row, uint8_t* out);

}  // namespace ember::kernels
