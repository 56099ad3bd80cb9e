// Streams one entry tensor to and from a file in bounded pieces, computing its per-chunk XXH3-64
// checksums (coldtier/entry_format.h) on the way, so neither writing nor restoring an entry ever holds it
// whole in memory: the extra memory is one kStreamBuffer, whatever the entry's size.
//
// Writing takes two passes over the state because the header, which precedes the data, carries the
// tensor's size and checksums: HashingSink computes them storing nothing, then FileSink writes.
// Reading is one pass: TensorSource hands the deserializer bytes read straight into its destination
// (the KV blocks) where it can, checksumming them as they arrive; VerifyRest settles the checksums at
// the end, after reading whatever the deserializer left.
//
// Thread-safety: each object is used by one thread at a time.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/byte_stream.h"
#include "util/env.h"
#include "util/status.h"

namespace ember {

// Write and read granularity: big enough for sequential I/O at disk speed, small enough not to matter.
inline constexpr size_t kStreamBuffer = size_t{1} << 20;
// How far ahead of the reader TensorSource asks the device to fetch (RandomAccessFile::Prefetch): the
// disk keeps reading while the reader checksums and copies, so a restore runs near disk speed. Costs
// page cache only, no process memory.
inline constexpr uint64_t kReadAhead = uint64_t{8} << 20;

// XXH3-64 of each chunk_size piece of a byte stream fed in arbitrary pieces (the last may be shorter).
class ChunkHasher {
 public:
  explicit ChunkHasher(uint64_t chunk_size);
  void Update(const void* data, size_t n);
  // The checksums of every chunk so far, the partial last one included.
  std::vector<uint64_t> Finish();
  uint64_t bytes() const { return bytes_; }

 private:
  struct FreeState {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  uint64_t chunk_size_;
  uint64_t bytes_ = 0;
  uint64_t in_chunk_ = 0;  // bytes of the current chunk hashed so far
  std::unique_ptr<XXH3_state_t, FreeState> state_;
  std::vector<uint64_t> sums_;
};

// Counts and checksums what is written; stores nothing.
class HashingSink final : public ByteSink {
 public:
  explicit HashingSink(uint64_t chunk_size) : hasher_(chunk_size) {}
  Status Write(const void* data, size_t n) override {
    hasher_.Update(data, n);
    return Status::Ok();
  }
  uint64_t bytes() const { return hasher_.bytes(); }
  std::vector<uint64_t> Finish() { return hasher_.Finish(); }

 private:
  ChunkHasher hasher_;
};

// Appends to a WritableFile in kStreamBuffer pieces: small writes are gathered, large ones go straight
// through. Flush() after the last Write.
class FileSink final : public ByteSink {
 public:
  explicit FileSink(WritableFile& file) : file_(file) {}
  Status Write(const void* data, size_t n) override;
  Status Flush();
  uint64_t bytes() const { return bytes_; }

 private:
  WritableFile& file_;
  std::vector<uint8_t> buf_;
  uint64_t bytes_ = 0;
};

// Reads bytes [offset, offset + size) of a file as a ByteSource, checksumming every byte in file order
// in chunk_size chunks when verify is set. A read failure is kept (read_error()) so the caller can report
// it with its own code rather than as the deserializer's "corrupt stream".
class TensorSource final : public ByteSource {
 public:
  TensorSource(RandomAccessFile& file, uint64_t offset, uint64_t size, uint64_t chunk_size, bool verify);
  Status Read(void* out, size_t n) override;
  size_t remaining() const override { return static_cast<size_t>(size_ - consumed_); }
  // Reads (and checksums) whatever has not been read yet; whether every chunk checksum equals expected.
  StatusOr<bool> VerifyRest(const std::vector<uint64_t>& expected);
  const Status& read_error() const { return read_error_; }

 private:
  // Reads n file bytes at the next file position into out, checksumming them.
  Status ReadFile(uint8_t* out, size_t n);

  RandomAccessFile& file_;
  uint64_t offset_, size_;
  uint64_t consumed_ = 0;  // bytes handed to the reader
  uint64_t file_pos_ = 0;  // bytes read from the file (consumed_ plus what waits in buf_)
  uint64_t prefetched_ = 0;  // bytes [0, prefetched_) have been handed to Prefetch
  bool verify_;
  ChunkHasher hasher_;
  std::vector<uint8_t> buf_;  // allocated on the first small read
  size_t buf_pos_ = 0, buf_len_ = 0;
  Status read_error_;
};

}  // namespace ember
