// ember's one seam to the outside world (docs/architecture.md "Env"; after leveldb's Env): every file
// operation, fsync, rename, directory sync, clock reading, sleep and timed wait in product code goes
// through an Env, so tests swap in an in-memory Env, a simulated clock or fault injection
// (tests/support/) and can inject ENOSPC, short writes, EIO, fsync failures, power cuts and the passing
// of time without sleeping. Env::Default() is the one process-wide real Env; objects take an Env* in
// their options and default to it. EnvWrapper (util/env_wrapper.h) forwards everything, for Envs that
// change one behaviour.
//
// Contracts shared by every implementation:
//   * Paths are absolute or relative strings joined with '/'; names returned by GetChildren are bare.
//   * Errors are Status values, never exceptions. errno is mapped once (ErrnoStatus) with the path, so
//     ENOSPC arrives as kNoSpace and a missing file as kNotFound.
//   * Nothing is durable until Sync() (file contents) and SyncDir() (the directory entry: creation,
//     rename, removal) have both succeeded. A crash may undo anything not covered by both.
//   * Thread-safety: PosixEnv is safe to share between threads (it holds no state). A WritableFile is
//     used by one thread at a time.
//   * Privacy and links (docs/coldtier.md "Directory safety"): files are created exclusively with mode
//     0600 and directories with 0700, whatever the umask; the last component of a file path is never
//     followed through a symbolic link (create, read, size, mtime), and only regular files are read or
//     sized (a FIFO or device at an entry name is an error, never a wait). Whether a directory may be
//     used at all is decided by private_dir.h on top of Stat.
//   * Inputs (MapFile): the files a user names (a model, a tokenizer) are opened the way any program
//     opens a path from its command line, through symbolic links (a model is often a link into a
//     download cache); still only regular files, and a FIFO there is an error, never a wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/mutex.h"
#include "util/status.h"

namespace ember {

// A file open for appending. Destroying it without Close() closes it and ignores the error.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends n bytes. On error some prefix of the bytes may have been written (a short write).
  virtual Status Append(const void* data, size_t n) = 0;
  // Makes every byte appended so far durable (fsync). Failure leaves durability unknown.
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

// A file open for reading at any offset (pread), so a large file is read in pieces through one open:
// the reader streams instead of holding the file whole. Safe for concurrent Reads.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly n bytes at offset into out. Fewer bytes available -> kCorrupt ("truncated").
  virtual Status Read(uint64_t offset, size_t n, void* out) = 0;
  // A hint that [offset, offset + n) will be read soon: start fetching it in the background (PosixEnv:
  // POSIX_FADV_WILLNEED), so the device works while the reader checksums and copies. No effect on what
  // Read returns; the default does nothing.
  virtual void Prefetch(uint64_t offset, size_t n) {
    (void)offset;
    (void)n;
  }
};

// What Stat reports about one path.
struct PathInfo {
  enum class Type { kFile, kDir, kSymlink, kOther };
  Type type = Type::kOther;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0;   // owner
};

// A read-only view of a whole file's bytes (Env::MapFile), valid and unchanged until this object is
// destroyed. Thread-safe for concurrent reads.
class MappedRegion {
 public:
  virtual ~MappedRegion() = default;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // A page-cache hint that never changes the bytes: unmaps [offset, offset + len) from this mapping
  // and drops the file's cached pages there that no process maps (writing dirty ones out first), so
  // the next access reads them from the file again (engine/weight_pages.h uses it once to re-cache weights in 2 MiB folios). Returns
  // false where there is no file cache to drop (the default, e.g. an in-memory Env's region).
  virtual bool DropCachedPages(size_t offset, size_t len) const {
    (void)offset;
    (void)len;
    return false;
  }

 protected:
  MappedRegion(const uint8_t* data, size_t size) : data_(data), size_(size) {}

 private:
  const uint8_t* const data_;
  const size_t size_;
};

// An advisory lock, held until this object is destroyed (or the process dies, kill -9 included).
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide real Env (PosixEnv::Default()). Product objects use it unless handed another.
  static Env* Default();

  // Creates path for writing, exclusively, mode 0600: fails if anything (a file, a symlink, dangling or
  // not) is already there, so a planted link is never followed and two writers never share a file. Use
  // TempName() for a fresh name.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Reads the whole file. Reads and sizes fail (kIoError, naming the path) on a symbolic link or
  // anything but a regular file.
  virtual StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) = 0;
  // Reads exactly n bytes at offset into out. Fewer bytes available -> kCorrupt ("truncated").
  virtual Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) = 0;
  virtual StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  // Maps an input file (see "Inputs" above: links are followed) read-only, whole; an empty file gives an
  // empty region. PosixEnv mmaps it shared, so a model's pages are the page cache's and its weights are
  // used in place, never copied. Not a regular file -> kInvalidArgument.
  virtual StatusOr<std::unique_ptr<MappedRegion>> MapFile(const std::string& path) = 0;
  // Opens path for reads at any offset, with the checks of ReadRange (regular file, no link). The default
  // (for test Envs) checks with FileSize and then reads through ReadRange by name; PosixEnv holds one
  // descriptor, so a rename over path after the open does not change what is read.
  virtual StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path);

  // Atomically replaces `to` with `from` (POSIX rename). Durable only after SyncDir of the directory.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;

  // Creates dir and any missing parents, each with mode 0700; an existing directory is not an error and
  // keeps its mode (private_dir.h decides whether it is fit to use).
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Whether dir is a directory (following symbolic links).
  virtual bool DirExists(const std::string& dir) = 0;
  // Bare names of the entries of dir (files and subdirectories, no "." or "..").
  virtual StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;

  // Modification time in microseconds since the epoch (the cold tier's recency: a restore touches it).
  virtual StatusOr<int64_t> GetMtimeMicros(const std::string& path) = 0;
  virtual Status SetMtimeMicros(const std::string& path, int64_t micros) = 0;

  // --- Time. Two clocks, never mixed: wall time for what is stored or shown (file times, `created`),
  // monotonic time for durations, deadlines and idleness (it never jumps). ---
  // Wall clock: microseconds since the Unix epoch.
  virtual int64_t WallMicros() = 0;
  // Monotonic clock: microseconds from an arbitrary origin fixed for the process.
  virtual int64_t MonotonicMicros() = 0;
  virtual void SleepForMicros(int64_t micros) = 0;
  // Waits on cv, with mu held as for CondVar::Wait, until a Signal, a spurious wake-up or
  // MonotonicMicros() >= deadline_micros; mu is held again on return. Returns whether the deadline has
  // passed. Callers loop on their own condition, as with any condition variable.
  virtual bool WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) REQUIRES(mu) = 0;

  // Type, permission bits and owner of path; of a symbolic link itself unless follow_symlinks.
  virtual StatusOr<PathInfo> Stat(const std::string& path, bool follow_symlinks) = 0;
  // chmod, never through a symbolic link.
  virtual Status SetPermissions(const std::string& path, uint32_t mode) = 0;
  // The user this process acts as: the owner of what it creates.
  virtual uint32_t Uid() = 0;
  // Takes an exclusive advisory lock on path (created 0600 if missing) without waiting. Held elsewhere
  // (another process, or another lock object of this one): kFailedPrecondition, naming the holder's pid
  // when the lock file says it.
  virtual StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
};

// The real file system and clocks. Default() is a process-wide instance that lives forever.
class PosixEnv final : public Env {
 public:
  static PosixEnv* Default();

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override;
  StatusOr<uint64_t> FileSize(const std::string& path) override;
  StatusOr<std::unique_ptr<MappedRegion>> MapFile(const std::string& path) override;
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status CreateDirs(const std::string& dir) override;
  bool DirExists(const std::string& dir) override;
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  StatusOr<int64_t> GetMtimeMicros(const std::string& path) override;
  Status SetMtimeMicros(const std::string& path, int64_t micros) override;
  int64_t WallMicros() override;
  int64_t MonotonicMicros() override;
  void SleepForMicros(int64_t micros) override;
  bool WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) REQUIRES(mu) override;
  StatusOr<PathInfo> Stat(const std::string& path, bool follow_symlinks) override;
  Status SetPermissions(const std::string& path, uint32_t mode) override;
  uint32_t Uid() override;
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
};

// "a/b" + "c" -> "a/b/c".
std::string JoinPath(const std::string& dir, const std::string& name);

// "<stem>.<16 random hex digits>.tmp": a temp file name nobody can predict (so nobody can plant anything
// there first) and two writers of one final name never pick alike. Every name ends in ".tmp", which
// the startup scan deletes.
std::string TempName(const std::string& stem);

}  // namespace ember
