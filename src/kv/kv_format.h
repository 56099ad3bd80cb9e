// Serialized KvState layout. All integers little-endian.
//
//   u32 magic = kKvMagic ("EKVS")      u32 version (1 or 2, see below)
//   u8  dtype (KvDtype)                u8  reserved[3] = 0
//   i32 n_layer, n_kv_head, head_dim_k, head_dim_v, block_size
//   n_layer x { u8 kind (StateKind), u8 reserved[3], i32 window }
//   i64 n_pos
//   version 2 only: n_layer x i64 held_from   (first position the layer still holds; a multiple of
//                                              block_size; 0 for kFull layers)
//   then, for each layer group (layers of one kind and window, groups in order of their first layer),
//   for each held block b of the group in [held_from / block_size, ceil(n_pos / block_size)), with
//   cnt = valid positions in b:
//     for each layer of the group: K [n_kv_head][cnt][head_dim_k] then V [n_kv_head][cnt][head_dim_v]
//
// Version 1 is what a state whose layers are all kFull writes (one group, every block held): byte for
// byte the format before window layers existed, so older files stay readable and full-attention states
// keep their exact bytes. A state with a kWindow layer writes version 2. Readers accept both.
//
// Only valid positions are written, so two states with equal contents serialize to equal bytes
// (whatever stale data a trimmed tail block still holds). A full block is written as the block's raw
// bytes, which is the same layout with cnt = block_size. Integrity (checksums) is the container's job:
// the prompt cache wraps this stream in its own checksummed file format.
#pragma once

#include <cstdint>

namespace ember {

inline constexpr uint32_t kKvMagic = 0x53564B45;  // "EKVS"
inline constexpr uint32_t kKvFormatVersion = 2;      // newest version written
inline constexpr uint32_t kKvFormatVersionFull = 1;  // written when every layer is kFull
inline constexpr uint32_t kKvFormatVersionWindow = 2;

}  // namespace ember
