// A MemEnv (mem_env.h: in-memory files, durability tracking, PowerLoss, the fake clock) with faults armed
// on top, after leveldb's db/fault_injection_test.cc. Each fault stays armed until changed:
//
//   * set_write_budget(n, code): appends succeed for n more bytes in total; the append that crosses the
//     budget writes the bytes that fit (a short write) and fails with `code` (kNoSpace models ENOSPC);
//   * set_read_error(true): every read of an existing file fails with kIoError (EIO);
//   * set_sync_error(true): Sync and SyncDir fail with kIoError and make nothing durable;
//   * set_dir_sync_error(true): only SyncDir fails (a failure after a rename has made a file visible);
//   * set_crash_after(n): the n-th mutating call from now (create, append, sync, rename, syncdir, remove,
//     set-mtime) and every later one fails without effect, as if the machine had died just before it.
//     crashed() reports it; PowerLoss() then reboots the env (drops unsynced state, clears the crash).
//
// The faults decide before MemEnv acts, so a failed call leaves MemEnv as it was (a short write leaves
// the bytes that fit). Thread-safety: as MemEnv; the fault state has its own mutex, always taken before
// MemEnv's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/mem_env.h"

namespace ember {

class FaultInjectionEnv final : public MemEnv {
 public:
  FaultInjectionEnv();
  ~FaultInjectionEnv() override;

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status SetMtimeMicros(const std::string& path, int64_t micros) override;

  // ---- Faults ----
  void set_write_budget(uint64_t bytes, StatusCode code = StatusCode::kNoSpace);
  void clear_write_budget();
  void set_read_error(bool on);
  void set_sync_error(bool on);
  void set_dir_sync_error(bool on);
  void set_crash_after(int64_t n);  // n >= 1
  bool crashed() const;
  // Number of mutating calls so far (to size a crash-at-every-step loop).
  int64_t mutating_calls() const;
  // MemEnv::PowerLoss, and the machine is up again (a crash is cleared and no longer armed).
  void PowerLoss() override;

 private:
  class FaultWritableFile;
  // Counts a mutating call; false (and the env is crashed) if it must fail.
  bool Tick() REQUIRES(fault_mu_);

  mutable Mutex fault_mu_;
  bool has_budget_ GUARDED_BY(fault_mu_) = false;
  uint64_t budget_ GUARDED_BY(fault_mu_) = 0;
  StatusCode budget_code_ GUARDED_BY(fault_mu_) = StatusCode::kNoSpace;
  bool read_error_ GUARDED_BY(fault_mu_) = false;
  bool sync_error_ GUARDED_BY(fault_mu_) = false;
  bool dir_sync_error_ GUARDED_BY(fault_mu_) = false;
  int64_t calls_ GUARDED_BY(fault_mu_) = 0;
  int64_t crash_at_ GUARDED_BY(fault_mu_) = -1;  // absolute call number that fails first; -1 = never
  bool crashed_ GUARDED_BY(fault_mu_) = false;
};

}  // namespace ember
