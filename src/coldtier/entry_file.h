// Reading and writing one cold-tier entry file (format: coldtier/entry_format.h, docs/coldtier.md).
//
// WriteEntry is atomic with respect to crashes (util/atomic_write.h): it writes `<name>.entry.<random>.tmp`
// (created exclusively, 0600: env.h), fsyncs it, renames it over `<name>.entry` (rename replaces a link
// planted there, never follows it) and fsyncs the directory. A crash at any instant leaves either the
// previous file (or none) under the final name, or the complete new one; at worst a stray .tmp file,
// which readers never open and ColdStore's startup scan deletes.
//
// Both directions stream (coldtier/tensor_stream.h): the state is serialized into the file and restored
// from it in pieces of at most 1 MiB, so the memory either needs beyond the state itself is one piece.
//
// Readers trust nothing: every length and offset is bounds-checked, the header checksum is always
// verified, and tensor checksums are verified when asked. Corruption is reported as kCorrupt with the
// file path and what was wrong; I/O errors keep their code (kIoError, kNotFound).
//
// Thread-safety: free functions over an Env; concurrent calls on different files are fine. Writing the
// same name from two threads at once is safe (distinct temp files; the last rename wins) but pointless.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/env.h"
#include "kv/kv_state.h"
#include "util/status.h"

namespace ember {

struct TensorRef {
  std::string name;
  uint64_t offset = 0;  // absolute file offset, kEntryAlign-aligned
  uint64_t size = 0;
  uint64_t chunk_size = 0;
  std::vector<uint64_t> chunk_checksums;  // XXH3-64 of each chunk_size piece (the last may be shorter)
};

// Everything the header says, plus where the data lies. Enough to index an entry without reading data.
struct EntryHeader {
  uint32_t format_version = 0;  // kEntryFormatVersion, or kEntryFormatVersionRecurrent
  std::string identity;
  std::string ns;
  std::vector<int32_t> tokens;
  KvConfig config;                           // geometry of the stored state (kinds per layer included)
  std::vector<int64_t> min_reusable_offset;  // per layer
  int64_t n_pos = 0;
  std::vector<TensorRef> tensors;
  uint64_t data_offset = 0;
  uint64_t file_size = 0;

  // Every layer can be trimmed to any offset (only full attention; window and recurrent layers cannot).
  bool Trimmable() const;
  // The largest per-layer min_reusable_offset: the earliest offset at which the whole state is reusable.
  int64_t MinReusableOffset() const;
};

// What to write. The referenced objects must outlive the call.
struct EntryView {
  std::string_view identity;
  std::string_view ns;
  std::span<const int32_t> tokens;
  const KvState* state = nullptr;  // n_pos() must equal tokens.size()
};

// Writes dir/<name>.entry atomically (see the top of this file); returns the final file's size.
// On failure nothing is left under the final name that was not there before, the temp file is removed
// (best effort), and the error keeps its code: ENOSPC -> kNoSpace, so the caller can treat it as soft.
StatusOr<uint64_t> WriteEntry(Env& env, const std::string& dir, const std::string& name, const EntryView& entry);

// Reads and verifies the preamble and header (header checksum always checked; file size must match).
StatusOr<EntryHeader> ReadHeader(Env& env, const std::string& path);

struct LoadedEntry {
  EntryHeader header;
  KvState state;
};
// Reads the whole entry, streaming the tensor into the new state; verify_tensors checks every chunk
// checksum (a mismatch is reported as such, whatever the damaged bytes did to the deserializer).
StatusOr<LoadedEntry> ReadEntry(Env& env, const std::string& path, bool verify_tensors);

// Whether two configs describe the same stored geometry (layers, heads, dims, dtype, block size, kinds,
// windows, recurrent state sizes).
bool SameGeometry(const KvConfig& a, const KvConfig& b);

}  // namespace ember
