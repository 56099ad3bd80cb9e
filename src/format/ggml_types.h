// Tensor element types as ggml numbers them in GGUF files, with their block geometry.
// Dequantization/quantization live in format/quant.h; this header is only the type table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ember {

// Values are the on-disk ggml type ids; never renumber.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  MXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;       // "q8_0"
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool supported;         // ember can dequantize it
};

// Traits for a raw type id from a file; nullopt for ids ggml does not define (or that were removed).
std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t raw_type);
inline GgmlTypeTraits TypeInfo(GgmlType t) { return *GgmlTypeInfo(static_cast<uint32_t>(t)); }
const char* GgmlTypeName(GgmlType t);
// "q8_0" / "Q8_0" -> type; nullopt if unknown.
std::optional<GgmlType> GgmlTypeFromName(const std::string& name);

// Bytes for a row of n elements; n must be a multiple of the block size (checked by callers).
inline uint64_t RowBytes(GgmlType t, uint64_t n) {
  const GgmlTypeTraits tr = TypeInfo(t);
  return n / tr.block_elems * tr.block_bytes;
}

}  // namespace ember
