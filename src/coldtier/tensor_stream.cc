#include "coldtier/tensor_stream.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ember {

// A zero chunk size (refused by the header checks before it gets here) would never complete a chunk.
ChunkHasher::ChunkHasher(uint64_t chunk_size)
    : chunk_size_(chunk_size == 0 ? 1 : chunk_size), state_(XXH3_createState()) {
  XXH3_64bits_reset(state_.get());
}

void ChunkHasher::Update(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_ += n;
  while (n > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, chunk_size_ - in_chunk_));
    XXH3_64bits_update(state_.get(), p, take);
    p += take;
    n -= take;
    in_chunk_ += take;
    if (in_chunk_ == chunk_size_) {  // a chunk is complete: its digest equals one-shot XXH3_64bits
      sums_.push_back(XXH3_64bits_digest(state_.get()));
      XXH3_64bits_reset(state_.get());
      in_chunk_ = 0;
    }
  }
}

std::vector<uint64_t> ChunkHasher::Finish() {
  if (in_chunk_ > 0) {
    sums_.push_back(XXH3_64bits_digest(state_.get()));
    XXH3_64bits_reset(state_.get());
    in_chunk_ = 0;
  }
  return sums_;
}

Status FileSink::Write(const void* data, size_t n) {
  bytes_ += n;
  if (buf_.size() + n > kStreamBuffer) EMBER_RETURN_IF_ERROR(Flush());
  if (n >= kStreamBuffer) return file_.Append(data, n);  // a full KV block: no copy
  if (buf_.capacity() < kStreamBuffer) buf_.reserve(kStreamBuffer);
  const auto* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + n);
  return Status::Ok();
}

Status FileSink::Flush() {
  if (buf_.empty()) return Status::Ok();
  Status st = file_.Append(buf_.data(), buf_.size());
  buf_.clear();
  return st;
}

TensorSource::TensorSource(RandomAccessFile& file, uint64_t offset, uint64_t size, uint64_t chunk_size,
                           bool verify)
    : file_(file), offset_(offset), size_(size), verify_(verify), hasher_(chunk_size) {}

Status TensorSource::ReadFile(uint8_t* out, size_t n) {
  if (prefetched_ < std::min(size_, file_pos_ + n + kReadAhead)) {  // keep 8-16 MiB in flight ahead
    const uint64_t end = std::min(size_, file_pos_ + n + 2 * kReadAhead);
    file_.Prefetch(offset_ + prefetched_, static_cast<size_t>(end - prefetched_));
    prefetched_ = end;
  }
  if (Status st = file_.Read(offset_ + file_pos_, n, out); !st.ok()) {
    if (read_error_.ok()) read_error_ = st;
    return st;
  }
  file_pos_ += n;
  if (verify_) hasher_.Update(out, n);
  return Status::Ok();
}

Status TensorSource::Read(void* data, size_t n) {
  if (n > remaining()) {
    return Corrupt("state stream truncated: need " + std::to_string(n) + " bytes at offset " +
                   std::to_string(consumed_) + ", have " + std::to_string(remaining()));
  }
  auto* out = static_cast<uint8_t*>(data);
  while (n > 0) {
    if (buf_pos_ < buf_len_) {
      const size_t take = std::min(n, buf_len_ - buf_pos_);
      std::memcpy(out, buf_.data() + buf_pos_, take);
      buf_pos_ += take;
      out += take;
      n -= take;
      consumed_ += take;
    } else if (n >= kStreamBuffer) {
      // Straight into the destination (a KV block), a piece at a time so each is checksummed while
      // it is still in the CPU cache.
      const size_t take = std::min(n, kStreamBuffer);
      EMBER_RETURN_IF_ERROR(ReadFile(out, take));
      out += take;
      n -= take;
      consumed_ += take;
    } else {
      buf_.resize(kStreamBuffer);
      buf_len_ = static_cast<size_t>(std::min<uint64_t>(kStreamBuffer, size_ - file_pos_));
      buf_pos_ = 0;
      EMBER_RETURN_IF_ERROR(ReadFile(buf_.data(), buf_len_));
    }
  }
  return Status::Ok();
}

StatusOr<bool> TensorSource::VerifyRest(const std::vector<uint64_t>& expected) {
  EMBER_RETURN_IF_ERROR(read_error_);
  buf_.resize(kStreamBuffer);
  while (file_pos_ < size_) {
    buf_len_ = static_cast<size_t>(std::min<uint64_t>(kStreamBuffer, size_ - file_pos_));
    EMBER_RETURN_IF_ERROR(ReadFile(buf_.data(), buf_len_));
  }
  buf_pos_ = buf_len_ = 0;
  consumed_ = size_;
  return hasher_.Finish() == expected;
}

}  // namespace ember
