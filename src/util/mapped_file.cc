#include "util/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (`ember serve
  // --model` on one hung); it changes nothing for a regular file or its mapping.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus("mmap", path, err);
    }
    data = static_cast<const uint8_t*>(p);
  }
  return std::unique_ptr<MappedFile>(new MappedFile(data, size, fd));
}

MappedFile::~MappedFile() {
  if (data() != nullptr) ::munmap(const_cast<uint8_t*>(data()), size());
  ::close(fd_);
}

bool MappedFile::DropCachedPages(size_t offset, size_t len) const {
  if (data() == nullptr || offset >= size()) return false;
  len = std::min(len, size() - offset);
  // Our own page-table entries first (a shared read-only file mapping: the bytes come back from the
  // file on the next access), else the cache would keep the pages as mapped.
  const long page = ::sysconf(_SC_PAGESIZE);
  const uintptr_t p = reinterpret_cast<uintptr_t>(data()) + offset;
  const uintptr_t lo = p & ~static_cast<uintptr_t>(page - 1);
  if (::madvise(reinterpret_cast<void*>(lo), p + len - lo, MADV_DONTNEED) != 0) return false;
  // Dirty pages (a file written moments ago) are not dropped; write them out first so they can be.
  (void)::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(len),
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
  return ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(len), POSIX_FADV_DONTNEED) == 0;
}

}  // namespace ember
