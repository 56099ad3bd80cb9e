// Serialized KvState layout (version 1). All integers little-endian.
//
//   u32 magic = kKvMagic ("EKVS")      u32 version = kKvFormatVersion
//   u8  dtype (KvDtype)                u8  reserved[3] = 0
//   i32 n_layer, n_kv_head, head_dim_k, head_dim_v, block_size
//   n_layer x { u8 kind (StateKind), u8 reserved[3], i32 window }
//   i64 n_pos
//   then for each block b in [0, ceil(n_pos / block_size)), with cnt = valid positions in b:
//     for each layer: K [n_kv_head][cnt][head_dim_k] then V [n_kv_head][cnt][head_dim_v], in dtype
//
// Only valid positions are written, so two states with equal contents serialize to equal bytes
// (whatever stale data a trimmed tail block still holds). A full block is written as the block's raw
// bytes, which is the same layout with cnt = block_size. Integrity (checksums) is the container's job:
// the prompt cache wraps this stream in its own checksummed file format.
#pragma once

#include <cstdint>

namespace ember {

inline constexpr uint32_t kKvMagic = 0x53564B45;  // "EKVS"
inline constexpr uint32_t kKvFormatVersion = 1;

}  // namespace ember
