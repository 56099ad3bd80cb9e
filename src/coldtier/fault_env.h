// An in-memory Env for tests, with a fake clock and fault injection (after leveldb's
// db/fault_injection_test.cc). It tracks what is durable the way a journaling file system promises:
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
// memory: no lock file appears.
//
// Injectable faults (each stays armed until changed):
//   * set_write_budget(n, code): appends succeed for n more bytes in total; the append that crosses the
//     budget writes the bytes that fit (a short write) and fails with `code` (kNoSpace models ENOSPC);
//   * set_read_error(true): every read fails with kIoError (EIO);
//   * set_sync_error(true): Sync and SyncDir fail with kIoError and make nothing durable;
//   * set_dir_sync_error(true): only SyncDir fails (a failure after a rename has made a file visible);
//   * set_crash_after(n): the n-th mutating call from now (create, append, sync, rename, syncdir, remove,
//     set-mtime) and every later one fails without effect, as if the machine had died just before it.
//     crashed() reports it; PowerLoss() then reboots the env (drops unsynced state, clears the crash).
//
// Thread-safety: all methods lock one mutex, so the env may be shared like PosixEnv. A WritableFile
// must not outlive its env.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "util/env.h"

namespace ember {

class FaultInjectionEnv final : public Env {
 public:
  FaultInjectionEnv();
  ~FaultInjectionEnv() override;

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
  int64_t WallMicros() override;
  // The fake clock serves both clocks; sleeping advances it, a timed wait polls it.
  int64_t MonotonicMicros() override { return WallMicros(); }
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
  void set_write_budget(uint64_t bytes, StatusCode code = StatusCode::kNoSpace);
  void clear_write_budget();
  void set_read_error(bool on);
  void set_sync_error(bool on);
  void set_dir_sync_error(bool on);
  void set_crash_after(int64_t n);  // n >= 1
  bool crashed() const;
  // Number of mutating calls so far (to size a crash-at-every-step loop).
  int64_t mutating_calls() const;
  void PowerLoss();

  // Direct access for corruption tests, bypassing faults and durability tracking (the change counts as
  // durable). Error if the file does not exist.
  Status FlipByte(const std::string& path, uint64_t offset);
  Status Truncate(const std::string& path, uint64_t size);
  // Writes a durable file outright (e.g. foreign files a scan must leave alone).
  void PutDurableFile(const std::string& path, std::vector<uint8_t> data);
  // Every file path currently visible, sorted.
  std::vector<std::string> AllFiles() const;

  struct Inode {
    std::vector<uint8_t> data;
    size_t synced = 0;  // bytes [0, synced) are durable
    int64_t mtime = 0;
  };

 private:
  friend class FaultWritableFile;
  friend class FaultLock;
  struct DirAttrs {
    uint32_t uid = kUid;
    uint32_t mode = 0700;
  };
  // Counts a mutating call; false (and the env is crashed) if it must fail.
  bool Tick();
  Status CrashedStatus(const std::string& what) const;
  Status AppendLocked(const std::shared_ptr<Inode>& inode, const std::string& path, const void* data,
                      size_t n);
  Status SyncLocked(const std::shared_ptr<Inode>& inode, const std::string& path);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Inode>> live_;     // what a reader sees now
  std::map<std::string, std::shared_ptr<Inode>> durable_;  // what survives PowerLoss
  std::map<std::string, DirAttrs> dirs_;  // every directory that exists (all durable)
  std::set<std::string> locks_;
  int64_t now_ = 1'000'000'000'000'000;  // an arbitrary fixed epoch: tests are deterministic
  bool has_budget_ = false;
  uint64_t budget_ = 0;
  StatusCode budget_code_ = StatusCode::kNoSpace;
  bool read_error_ = false;
  bool sync_error_ = false;
  bool dir_sync_error_ = false;
  int64_t calls_ = 0;
  int64_t crash_at_ = -1;  // absolute call number that fails first; -1 = never
  bool crashed_ = false;
};

}  // namespace ember
