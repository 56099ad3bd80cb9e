// On-disk layout of one cold-tier entry file (versions 1 and 2). Prose spec with rationale: docs/coldtier.md.
// All integers little-endian.
//
//   Preamble (kPreambleSize = 48 bytes, fixed for every version):
//     u64 magic = kEntryMagic ("EMBRCOLD")
//     u32 format_version (1 or 2, see below)       u32 reserved = 0
//     u64 header_length        bytes of the header that follows the preamble
//     u64 data_offset          first tensor byte; a multiple of kEntryAlign, >= 48 + header_length
//     u64 file_size            total bytes of a complete file (a truncated file is caught before parsing)
//     u64 header_checksum      XXH3-64 of the header bytes, seeded with XXH3-64 of preamble bytes [0, 40)
//                              (so a flipped preamble field is caught too)
//   Header (header_length bytes; str = u32 length + bytes):
//     str identity             must equal the directory it sits in (<dir>/<identity>/...)
//     str namespace            the reuse namespace; its hash names the parent directory
//     u64 n_tokens, then n_tokens x i32 tokens
//     KvConfig: i32 n_layer, n_kv_head, head_dim_k, head_dim_v, block_size; u8 dtype, u8 reserved[3]
//     n_layer x { u8 kind (StateKind), u8 dtype, u8 reserved[2], i32 window, i64 min_reusable_offset
//                 version 2 only: i64 state_floats  (kRecurrent: the layer's float count; else 0) }
//     i64 n_pos                equals n_tokens
//     u32 n_tensors, then per tensor:
//       str name; u64 offset (multiple of kEntryAlign); u64 size; u64 chunk_size;
//       u32 n_chunks = ceil(size / chunk_size); n_chunks x u64 XXH3-64 of each chunk
//   Padding with zeros up to data_offset, then each tensor at its offset (zero padding between).
//
// Version 1 stores one tensor, "kv": the bytes KvState::Serialize produces (kv/kv_format.h), checksummed
// in kEntryChunk-sized chunks so a restore can verify while it streams.
//
// Version 2 is version 1 plus each layer's state_floats, so the header alone describes a state with
// kRecurrent layers (Qwen3.5's gated delta net); it is written for exactly those states (a "kv" stream
// of kv format version 3), and every other state still writes version 1, byte for byte as before.
// Readers accept both and refuse a version 1 header that declares a recurrent layer (no writer made one:
// KvState refused recurrent layers before version 2 existed) and a version 2 header without one.
// kEntryFormatVersion stays 1 on purpose: it is keyed into the cache identity (tiered/cache_identity.cc),
// and raising it would orphan every existing cache directory although their files are unchanged.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

inline constexpr uint64_t kEntryMagic = 0x444C4F4352424D45ull;  // "EMBRCOLD" little-endian
inline constexpr uint32_t kEntryFormatVersion = 1;           // states without recurrent layers
inline constexpr uint32_t kEntryFormatVersionRecurrent = 2;  // states with kRecurrent layers
inline constexpr size_t kPreambleSize = 48;
inline constexpr size_t kPreambleChecksummed = 40;  // preamble bytes that seed the header checksum
inline constexpr uint64_t kEntryAlign = 4096;        // tensors start page-aligned (direct reads)
inline constexpr uint64_t kEntryChunk = 1 << 20;     // checksum granularity of tensor data
// Sanity bounds: a header or tensor larger than these is corrupt, not a reason to allocate.
inline constexpr uint64_t kMaxHeaderLength = 256ull << 20;
inline constexpr uint32_t kMaxTensors = 1024;

inline constexpr const char* kEntryExtension = ".entry";
inline constexpr const char* kTempExtension = ".tmp";  // "<id>.<random>.tmp" (env.h TempName)
// In each identity directory: the advisory lock of the one store that owns it (cold_store.h).
inline constexpr const char* kLockFileName = "lock";

}  // namespace ember
