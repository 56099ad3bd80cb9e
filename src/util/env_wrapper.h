// An Env that forwards every call to another (after leveldb's EnvWrapper): derive from it and override
// only what differs, e.g. a benchmark Env that skips fsync or a test Env with a simulated clock. The
// target must outlive the wrapper.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/env.h"

namespace ember {

class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) override { return target_->ReadFile(path); }
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override {
    return target_->ReadRange(path, offset, n, out);
  }
  StatusOr<uint64_t> FileSize(const std::string& path) override { return target_->FileSize(path); }
  StatusOr<std::unique_ptr<MappedRegion>> MapFile(const std::string& path) override {
    return target_->MapFile(path);
  }
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    return target_->NewRandomAccessFile(path);
  }
  Status Rename(const std::string& from, const std::string& to) override { return target_->Rename(from, to); }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status CreateDirs(const std::string& dir) override { return target_->CreateDirs(dir); }
  bool DirExists(const std::string& dir) override { return target_->DirExists(dir); }
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return target_->GetChildren(dir);
  }
  StatusOr<int64_t> GetMtimeMicros(const std::string& path) override { return target_->GetMtimeMicros(path); }
  Status SetMtimeMicros(const std::string& path, int64_t micros) override {
    return target_->SetMtimeMicros(path, micros);
  }
  int64_t WallMicros() override { return target_->WallMicros(); }
  int64_t MonotonicMicros() override { return target_->MonotonicMicros(); }
  void SleepForMicros(int64_t micros) override { target_->SleepForMicros(micros); }
  bool WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) REQUIRES(mu) override {
    return target_->WaitUntil(cv, mu, deadline_micros);
  }
  StatusOr<PathInfo> Stat(const std::string& path, bool follow_symlinks) override {
    return target_->Stat(path, follow_symlinks);
  }
  Status SetPermissions(const std::string& path, uint32_t mode) override {
    return target_->SetPermissions(path, mode);
  }
  uint32_t Uid() override { return target_->Uid(); }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return target_->LockFile(path);
  }

 private:
  Env* const target_;
};

}  // namespace ember
