// Byte streams for state serialization (after llama.cpp's llama-io.h): state is written once against
// these two interfaces, so the same code fills a RAM blob or an SSD file (the cache supplies a file sink).
//
// Thread-safety: a stream is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Appends n bytes. On error the sink's contents are unspecified; callers discard it.
  virtual Status Write(const void* data, size_t n) = 0;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads exactly n bytes or returns Corrupt (short input) / IoError.
  virtual Status Read(void* data, size_t n) = 0;
  // Bytes left to read. A reader checks what a stream's header promises against it before allocating
  // for it (the header may come from a corrupt or hostile file).
  virtual size_t remaining() const = 0;
};

// A growable in-memory sink (the RAM blob).
class VectorSink final : public ByteSink {
 public:
  Status Write(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return Status::Ok();
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads from a caller-owned buffer that must outlive the source.
class SpanSource final : public ByteSource {
 public:
  SpanSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  Status Read(void* out, size_t n) override {
    if (n > size_ - pos_) {
      return Corrupt("state stream truncated: need " + std::to_string(n) + " bytes at offset " +
                     std::to_string(pos_) + ", have " + std::to_string(size_ - pos_));
    }
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  size_t remaining() const override { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace ember
