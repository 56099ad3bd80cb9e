// GGUF on-disk constants (little-endian). The format in prose:
//   header:   "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
//   metadata: n_kv x { string key | u32 value_type | value }
//             string = u64 length + bytes (no NUL); array = u32 elem_type | u64 count | elems
//   tensors:  n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to general.alignment (default 32), then the data section; tensor offsets are relative to it
//   and each is a multiple of the alignment.
#pragma once

#include <cstdint>

namespace ember::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kMinVersion = 2;
constexpr uint32_t kMaxVersion = 3;
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 1024;   // reader limit; the writer keeps names < 64 for ggml
constexpr uint32_t kMaxArrayDepth = 4;            // arrays of arrays beyond this are refused
// Smallest encodings, used to bound counts by the bytes left before allocating anything.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;   // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

}  // namespace ember::gguf
