// The cold tier's one seam to the outside world (style.md point 1, after leveldb's Env): every file
// operation, fsync, rename, directory sync and "now" goes through Env, so tests swap in an in-memory
// FaultInjectionEnv (fault_env.h) with a fake clock and can inject ENOSPC, short writes, EIO, fsync
// failures and power cuts.
//
// Contracts shared by every implementation:
//   * Paths are absolute or relative strings joined with '/'; names returned by GetChildren are bare.
//   * Errors are Status values, never exceptions. errno is mapped once (ErrnoStatus) with the path, so
//     ENOSPC arrives as kNoSpace and a missing file as kNotFound.
//   * Nothing is durable until Sync() (file contents) and SyncDir() (the directory entry: creation,
//     rename, removal) have both succeeded. A crash may undo anything not covered by both.
//   * Thread-safety: PosixEnv is safe to share between threads (it holds no state). A WritableFile is
//     used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

class Env {
 public:
  virtual ~Env() = default;

  // Creates (or truncates) path for writing.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Reads the whole file.
  virtual StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) = 0;
  // Reads exactly n bytes at offset into out. Fewer bytes available -> kCorrupt ("truncated").
  virtual Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) = 0;
  virtual StatusOr<uint64_t> FileSize(const std::string& path) = 0;

  // Atomically replaces `to` with `from` (POSIX rename). Durable only after SyncDir of the directory.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;

  // Creates dir and any missing parents; an existing directory is not an error.
  virtual Status CreateDirs(const std::string& dir) = 0;
  virtual bool DirExists(const std::string& dir) = 0;
  // Bare names of the entries of dir (files and subdirectories, no "." or "..").
  virtual StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;

  // Modification time in microseconds since the epoch (the cold tier's recency: a restore touches it).
  virtual StatusOr<int64_t> GetMtimeMicros(const std::string& path) = 0;
  virtual Status SetMtimeMicros(const std::string& path, int64_t micros) = 0;
  virtual int64_t NowMicros() = 0;
};

// The real file system. Default() is a process-wide instance that lives forever.
class PosixEnv final : public Env {
 public:
  static PosixEnv* Default();

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override;
  StatusOr<uint64_t> FileSize(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status CreateDirs(const std::string& dir) override;
  bool DirExists(const std::string& dir) override;
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  StatusOr<int64_t> GetMtimeMicros(const std::string& path) override;
  Status SetMtimeMicros(const std::string& path, int64_t micros) override;
  int64_t NowMicros() override;
};

// "a/b" + "c" -> "a/b/c".
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace ember
