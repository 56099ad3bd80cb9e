// PosixEnv::MapFile's region: a read-only shared mmap of a whole file, unmapped when destroyed. Product
// code asks its Env (util/env.h MapFile), so tests can hand it an in-memory file; this is the POSIX half.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "util/env.h"
#include "util/status.h"

namespace ember {

class MappedFile final : public MappedRegion {
 public:
  // Follows symbolic links (a model is the user's input); anything but a regular file -> kInvalidArgument.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile() override;

  // MADV_DONTNEED on the mapping's pages, then POSIX_FADV_DONTNEED on the file's.
  bool DropCachedPages(size_t offset, size_t len) const override;

 private:
  MappedFile(const uint8_t* data, size_t size, int fd) : MappedRegion(data, size), fd_(fd) {}

  const int fd_;  // kept open (read-only) for DropCachedPages' fadvise
};

}  // namespace ember
