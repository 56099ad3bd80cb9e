// An in-memory Env for tests, with a fake clock (after leveldb's helpers/memenv). It tracks what is
// durable the way a journaling file system promises:
//
//   * file bytes become durable when the file is Sync()ed (up to the length at that moment);
//   * a directory entry (a creation, rename or removal) becomes durable when its directory is SyncDir()ed;
//
// PowerLoss() throws away everything that was not durable: every file is cut back to its synced length,
// and each directory's entries revert to what they were at its last SyncDir (so an unsynced rename is
// undone and an unsynced new file vanishes). Directories themselves are always durable (a simplification:
// the cold tier creates them once, long before the entries they hold).
//
// Files are created exclusively (an existing name fails, as with O_EXCL). Every directory and file is
// owned by uid kUid with mode 0700 (directories) or 0600 (files) unless a test says otherwise with
// set_dir_attrs; symbolic links are not modelled (tests of links use PosixEnv). Locks are names held in
// memory: no lock file appears. MapFile hands out a copy of the bytes at the time of the call.
//
// Time: one fake clock serves both clocks (WallMicros == MonotonicMicros), starting at a fixed epoch so
// tests are deterministic; SleepForMicros and AdvanceMicros move it, and WaitUntil polls it (1 ms of
// real time per call). A fuller simulated clock is tests/support/sim_env.h.
//
// Faults are FaultInjectionEnv's (fault_injection_env.h), a MemEnv with failures armed on top.
// Thread-safety: every method locks one mutex, so the env may be shared like PosixEnv. A WritableFile or
// FileLock must not outlive its env.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/mutex.h"
#include "util/thread_annotations.h"

namespace ember {

class MemEnv : public Env {
 public:
  MemEnv();
  ~MemEnv() override;

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override;
  StatusOr<uint64_t> FileSize(const std::string& path) override;
  StatusOr<std::unique_ptr<MappedRegion>> MapFile(const std::string& path) override;
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
  void SleepForMicros(int64_t micros) override { AdvanceMicros(micros); }
  bool WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) REQUIRES(mu) override;
  StatusOr<PathInfo> Stat(const std::string& path, bool follow_symlinks) override;
  Status SetPermissions(const std::string& path, uint32_t mode) override;
  uint32_t Uid() override { return kUid; }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;

  static constexpr uint32_t kUid = 1000;

  // ---- Test controls ----
  // Owner and mode of an existing directory (e.g. another user's, or world-writable).
  void set_dir_attrs(const std::string& dir, uint32_t uid, uint32_t mode);
  void AdvanceMicros(int64_t us);
  // Drops everything that is not durable (see the top of this file).
  virtual void PowerLoss();
  // Direct access for corruption tests, bypassing durability tracking (the change counts as durable).
  // Error if the file does not exist.
  Status FlipByte(const std::string& path, uint64_t offset);
  Status Truncate(const std::string& path, uint64_t size);
  // Writes a durable file outright (e.g. foreign files a scan must leave alone, or a model to map).
  void PutDurableFile(const std::string& path, std::vector<uint8_t> data);
  bool FileExists(const std::string& path) const;
  // Every file path currently visible, sorted.
  std::vector<std::string> AllFiles() const;

 private:
  class MemWritableFile;
  class MemLock;
  struct Inode {
    std::vector<uint8_t> data;
    size_t synced = 0;  // bytes [0, synced) are durable
    int64_t mtime = 0;
  };
  struct DirAttrs {
    uint32_t uid = kUid;
    uint32_t mode = 0700;
  };

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Inode>> live_ GUARDED_BY(mu_);     // what a reader sees now
  std::map<std::string, std::shared_ptr<Inode>> durable_ GUARDED_BY(mu_);  // what survives PowerLoss
  std::map<std::string, DirAttrs> dirs_ GUARDED_BY(mu_);  // every directory that exists (all durable)
  std::set<std::string> locks_ GUARDED_BY(mu_);
  int64_t now_ GUARDED_BY(mu_) = 1'000'000'000'000'000;  // an arbitrary fixed epoch
};

}  // namespace ember
