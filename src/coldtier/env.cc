#include "coldtier/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace ember {

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {  // write() may be short; only an error ends the loop early
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::Ok();
  }
  Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoStatus("fsync", path_, errno);
    return Status::Ok();
  }
  Status Close() override {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return ErrnoStatus("close", path_, errno);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

// Closes fd on scope exit (read paths have several early returns).
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

PosixEnv* PosixEnv::Default() {
  static PosixEnv* env = new PosixEnv();  // never destroyed: usable from static destructors
  return env;
}

StatusOr<std::unique_ptr<WritableFile>> PosixEnv::NewWritableFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
}

StatusOr<std::vector<uint8_t>> PosixEnv::ReadFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
  std::vector<uint8_t> out(size);
  EMBER_RETURN_IF_ERROR(ReadRange(path, 0, out.size(), out.data()));
  return out;
}

Status PosixEnv::ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  FdCloser closer{fd};
  auto* p = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path, errno);
    }
    if (r == 0) {
      return Corrupt(path + ": truncated: need " + std::to_string(n) + " bytes at offset " +
                     std::to_string(offset) + ", file ends after " + std::to_string(done));
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

StatusOr<uint64_t> PosixEnv::FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

Status PosixEnv::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("rename", from + " -> " + to, errno);
  return Status::Ok();
}

Status PosixEnv::SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", dir, errno);
  FdCloser closer{fd};
  if (::fsync(fd) != 0) return ErrnoStatus("fsync", dir, errno);
  return Status::Ok();
}

Status PosixEnv::RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoStatus("unlink", path, errno);
  return Status::Ok();
}

Status PosixEnv::CreateDirs(const std::string& dir) {
  // Create each prefix in turn; EEXIST on a directory is fine (another creator may race us).
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir", prefix, errno);
  }
  if (!DirExists(dir)) return IoError("mkdir " + dir + ": exists and is not a directory");
  return Status::Ok();
}

bool PosixEnv::DirExists(const std::string& dir) {
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

StatusOr<std::vector<std::string>> PosixEnv::GetChildren(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus("opendir", dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

StatusOr<int64_t> PosixEnv::GetMtimeMicros(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
  return int64_t{st.st_mtim.tv_sec} * 1000000 + st.st_mtim.tv_nsec / 1000;
}

Status PosixEnv::SetMtimeMicros(const std::string& path, int64_t micros) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;  // leave atime alone
  times[1].tv_sec = micros / 1000000;
  times[1].tv_nsec = (micros % 1000000) * 1000;
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) return ErrnoStatus("utimensat", path, errno);
  return Status::Ok();
}

int64_t PosixEnv::NowMicros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace ember
