// Dequantization (every supported ggml type -> f32) and quantization (f32 -> type), exactly per the
// ggml block formats. These are the scalar reference implementations: kernels/ may have faster paths
// but tests compare them against these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"
#include "util/status.h"

namespace ember {

// n must be a multiple of the type's block size. dst receives n floats.
Status Dequantize(GgmlType type, const void* src, float* dst, size_t n);
// Whether Quantize supports `type` as a target.
bool CanQuantize(GgmlType type);
// Writes RowBytes(type, n) bytes to dst. n must be a multiple of the block size.
Status Quantize(GgmlType type, const float* src, void* dst, size_t n);

}  // namespace ember
