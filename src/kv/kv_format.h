// Serialized KvState layout. All integers little-endian.
//
//   u32 magic = kKvMagic ("EKVS")      u32 version (1, 2 or 3, see below)
//   u8  dtype (KvDtype)                u8  reserved[3] = 0
//   i32 n_layer, n_kv_head, head_dim_k, head_dim_v, block_size
//   n_layer x { u8 kind (StateKind), u8 reserved[3], i32 window
//               version 3 only: i64 state_floats  (kRecurrent: the layer's float count; else 0) }
//   i64 n_pos
//   versions 2 and 3: n_layer x i64 held_from   (first position the layer still holds; a multiple of
//                                                block_size for attention layers, 0 for kFull layers;
//                                                n_pos for kRecurrent layers)
//   then, for each attention layer group (layers of one kind and window, groups in order of their first
//   layer), for each held block b of the group in [held_from / block_size, ceil(n_pos / block_size)),
//   with cnt = valid positions in b:
//     for each layer of the group: K [n_kv_head][cnt][head_dim_k] then V [n_kv_head][cnt][head_dim_v]
//   version 3 only, last: for each kRecurrent layer in layer order, state_floats f32 (the state after
//   n_pos positions; no padding, whatever the in-memory alignment of the slices)
//
// Version 1 is what a state whose layers are all kFull writes (one group, every block held): byte for
// byte the format before window layers existed, so older files stay readable and full-attention states
// keep their exact bytes. A state with a kWindow layer (and no kRecurrent one) writes version 2, byte for
// byte as before recurrent layers existed. A state with a kRecurrent layer writes version 3, and only
// such a state does: a reader refuses version 3 for a model without recurrent layers, and versions 1
// and 2 for one with them. Readers accept all three.
//
// Only valid positions are written, so two states with equal contents serialize to equal bytes
// (whatever stale data a trimmed tail block still holds). A full block is written as the block's raw
// bytes, which is the same layout with cnt = block_size. Integrity (checksums) is the container's job:
// the prompt cache wraps this stream in its own checksummed file format. Recurrent floats are data:
// any bit pattern (NaN included) reads back as it was written.
#pragma once

#include <cstdint>

namespace ember {

inline constexpr uint32_t kKvMagic = 0x53564B45;  // "EKVS"
inline constexpr uint32_t kKvFormatVersion = 3;      // newest version written
inline constexpr uint32_t kKvFormatVersionFull = 1;  // written when every layer is kFull
inline constexpr uint32_t kKvFormatVersionWindow = 2;  // a kWindow layer, no kRecurrent layer
inline constexpr uint32_t kKvFormatVersionRecurrent = 3;  // any kRecurrent layer

}  // namespace ember
