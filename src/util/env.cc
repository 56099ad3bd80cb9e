#include "util/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <ctime>
#include <thread>

#include "util/hex.h"
#include "util/mapped_file.h"

namespace ember {

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string TempName(const std::string& stem) {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    // No entropy yet (early boot): still unique per process and call, which is what O_EXCL needs.
    static std::atomic<uint64_t> counter{0};
    r = (uint64_t(::getpid()) << 40) ^ uint64_t(::time(nullptr)) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
  }
  return stem + "." + Hex64(r) + ".tmp";
}

namespace {

// open() failed on a path whose last component must not be a link: say so plainly (ELOOP's text,
// "Too many levels of symbolic links", hides the reason).
Status OpenError(const std::string& path, int err) {
  if (err == ELOOP) return IoError("open " + path + ": is a symbolic link (the cache never follows links)");
  return ErrnoStatus("open", path, err);
}

// Only regular files are read: a FIFO or device planted at an entry name would block open() or read()
// forever (or read without end), hanging a server's startup scan or `ember cache`.
Status NotRegular(const std::string& path) {
  return IoError(path + ": not a regular file (the cache reads only regular files)");
}

class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // closing the last descriptor releases the flock

 private:
  int fd_;
};

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

// Reads exactly n bytes at offset (pread loop); the message names path.
Status PreadFully(int fd, const std::string& path, uint64_t offset, size_t n, void* out) {
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

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  Status Read(uint64_t offset, size_t n, void* out) override { return PreadFully(fd_, path_, offset, n, out); }
  void Prefetch(uint64_t offset, size_t n) override {
    (void)::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
  }

 private:
  std::string path_;
  int fd_;
};

// Env's default RandomAccessFile: reads by name through the Env (in-memory and fault-injecting Envs).
class EnvRandomAccessFile final : public RandomAccessFile {
 public:
  EnvRandomAccessFile(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status Read(uint64_t offset, size_t n, void* out) override { return env_->ReadRange(path_, offset, n, out); }

 private:
  Env* env_;
  std::string path_;
};

// Closes fd on scope exit (read paths have several early returns).
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Env* Env::Default() { return PosixEnv::Default(); }

StatusOr<std::unique_ptr<RandomAccessFile>> Env::NewRandomAccessFile(const std::string& path) {
  EMBER_RETURN_IF_ERROR(FileSize(path).status());  // missing, a link, not a regular file: fail at open
  return std::unique_ptr<RandomAccessFile>(new EnvRandomAccessFile(this, path));
}

PosixEnv* PosixEnv::Default() {
  static PosixEnv* env = new PosixEnv();  // never destroyed: usable from static destructors
  return env;
}

StatusOr<std::unique_ptr<WritableFile>> PosixEnv::NewWritableFile(const std::string& path) {
  // O_EXCL: fail on anything already there, a symlink included (O_NOFOLLOW says the same for clarity).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return OpenError(path, errno);
  // The umask can only remove bits from 0600, but a strange one (0400) would leave a file we cannot read.
  if (::fchmod(fd, 0600) != 0) {
    int err = errno;
    ::close(fd);
    (void)::unlink(path.c_str());
    return ErrnoStatus("chmod", path, err);
  }
  return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
}

StatusOr<std::vector<uint8_t>> PosixEnv::ReadFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
  std::vector<uint8_t> out(size);
  EMBER_RETURN_IF_ERROR(ReadRange(path, 0, out.size(), out.data()));
  return out;
}

namespace {

// Opens path for reading: never through a link, only a regular file.
StatusOr<int> OpenForRead(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it has no effect on regular files).
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(path);
  }
  return fd;
}

}  // namespace

Status PosixEnv::ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) {
  EMBER_ASSIGN_OR_RETURN(int fd, OpenForRead(path));
  FdCloser closer{fd};
  return PreadFully(fd, path, offset, n, out);
}

StatusOr<std::unique_ptr<RandomAccessFile>> PosixEnv::NewRandomAccessFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(int fd, OpenForRead(path));
  return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd));
}

StatusOr<uint64_t> PosixEnv::FileSize(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
  if (S_ISLNK(st.st_mode)) return OpenError(path, ELOOP);
  if (!S_ISREG(st.st_mode)) return NotRegular(path);
  return static_cast<uint64_t>(st.st_size);
}

StatusOr<std::unique_ptr<MappedRegion>> PosixEnv::MapFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, MappedFile::Open(path));
  return std::unique_ptr<MappedRegion>(std::move(map));
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
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      // mkdir applies the umask; a directory we made is exactly 0700 (a umask like 0200 would otherwise
      // leave one we cannot write).
      if (::chmod(prefix.c_str(), 0700) != 0) return ErrnoStatus("chmod", prefix, errno);
    } else if (errno != EEXIST) {
      return ErrnoStatus("mkdir", prefix, errno);
    }
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
  if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
  return int64_t{st.st_mtim.tv_sec} * 1000000 + st.st_mtim.tv_nsec / 1000;
}

Status PosixEnv::SetMtimeMicros(const std::string& path, int64_t micros) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;  // leave atime alone
  times[1].tv_sec = micros / 1000000;
  times[1].tv_nsec = (micros % 1000000) * 1000;
  if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoStatus("utimensat", path, errno);
  return Status::Ok();
}

int64_t PosixEnv::WallMicros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t PosixEnv::MonotonicMicros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

void PosixEnv::SleepForMicros(int64_t micros) {
  if (micros > 0) std::this_thread::sleep_for(std::chrono::microseconds(micros));
}

bool PosixEnv::WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) {
  using namespace std::chrono;
  // MonotonicMicros is steady_clock's own epoch, so the deadline converts exactly.
  cv->WaitUntilSteady(mu, steady_clock::time_point(duration_cast<steady_clock::duration>(microseconds(deadline_micros))));
  return MonotonicMicros() >= deadline_micros;
}

StatusOr<PathInfo> PosixEnv::Stat(const std::string& path, bool follow_symlinks) {
  struct stat st;
  if ((follow_symlinks ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
    return ErrnoStatus("stat", path, errno);
  }
  PathInfo info;
  info.type = S_ISREG(st.st_mode)   ? PathInfo::Type::kFile
              : S_ISDIR(st.st_mode) ? PathInfo::Type::kDir
              : S_ISLNK(st.st_mode) ? PathInfo::Type::kSymlink
                                    : PathInfo::Type::kOther;
  info.mode = st.st_mode & 07777;
  info.uid = st.st_uid;
  return info;
}

Status PosixEnv::SetPermissions(const std::string& path, uint32_t mode) {
  // Linux cannot chmod a link itself (fchmodat's AT_SYMLINK_NOFOLLOW is unsupported): open the path
  // without following it, then fchmod what was opened.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  FdCloser closer{fd};
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) return ErrnoStatus("chmod", path, errno);
  return Status::Ok();
}

uint32_t PosixEnv::Uid() { return static_cast<uint32_t>(::geteuid()); }

StatusOr<std::unique_ptr<FileLock>> PosixEnv::LockFile(const std::string& path) {
  // flock, not fcntl: an fcntl lock belongs to the process and is dropped when *any* descriptor of the
  // file closes; a flock belongs to this open file description only (two in one process exclude each
  // other too) and the kernel drops it when the holder dies.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return OpenError(path, errno);
  if (struct stat st; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(path);
  }
  (void)::fchmod(fd, 0600);  // as NewWritableFile: exactly 0600 whatever the umask (best effort)
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder = "by another process";
    char buf[32];
    ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    long pid = 0;
    if (n > 0 && std::from_chars(buf, buf + n, pid).ec == std::errc() && pid > 0) {
      holder = "by pid " + std::to_string(pid);
    }
    ::close(fd);
    if (err == EWOULDBLOCK) return FailedPrecondition("lock " + path + " is held " + holder);
    return ErrnoStatus("flock", path, err);
  }
  // Who holds it, for the next one's message (best effort: the lock itself is the flock).
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool named = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) == ssize_t(pid.size());
  (void)named;  // not fatal: the holder is then just not named
  return std::unique_ptr<FileLock>(new PosixFileLock(fd));
}

}  // namespace ember
