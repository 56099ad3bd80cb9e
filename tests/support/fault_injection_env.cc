#include "support/fault_injection_env.h"

#include <cerrno>

namespace ember {

namespace {

Status CrashedStatus(const std::string& what) { return IoError(what + ": simulated crash (the machine is down)"); }

std::string StripSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

// Applies the write budget, sync errors and the crash point, then forwards to MemEnv's file.
class FaultInjectionEnv::FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::string path, std::unique_ptr<WritableFile> file)
      : env_(env), path_(std::move(path)), file_(std::move(file)) {}
  Status Append(const void* data, size_t n) override {
    MutexLock lock(&env_->fault_mu_);
    if (!env_->Tick()) return CrashedStatus("write " + path_);
    size_t fits = n;
    if (env_->has_budget_ && n > env_->budget_) fits = static_cast<size_t>(env_->budget_);
    EMBER_RETURN_IF_ERROR(file_->Append(data, fits));
    if (env_->has_budget_) env_->budget_ -= fits;
    if (fits < n) {
      if (env_->budget_code_ == StatusCode::kNoSpace) return ErrnoStatus("write", path_, ENOSPC);
      return Status(env_->budget_code_, "write " + path_ + ": injected short write after " + std::to_string(fits) +
                                            " of " + std::to_string(n) + " bytes");
    }
    return Status::Ok();
  }
  Status Sync() override {
    MutexLock lock(&env_->fault_mu_);
    if (!env_->Tick()) return CrashedStatus("fsync " + path_);
    if (env_->sync_error_) return ErrnoStatus("fsync", path_, EIO);
    return file_->Sync();
  }
  Status Close() override { return file_->Close(); }

 private:
  FaultInjectionEnv* env_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
};

FaultInjectionEnv::FaultInjectionEnv() = default;
FaultInjectionEnv::~FaultInjectionEnv() = default;

bool FaultInjectionEnv::Tick() {
  if (crashed_) return false;
  ++calls_;
  if (crash_at_ >= 0 && calls_ >= crash_at_) {
    crashed_ = true;
    return false;
  }
  return true;
}

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  MutexLock lock(&fault_mu_);
  if (!Tick()) return CrashedStatus("open " + path);
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, MemEnv::NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, path, std::move(file)));
}

StatusOr<std::vector<uint8_t>> FaultInjectionEnv::ReadFile(const std::string& path) {
  MutexLock lock(&fault_mu_);
  if (read_error_ && FileExists(path)) return ErrnoStatus("read", path, EIO);  // a missing file stays kNotFound
  return MemEnv::ReadFile(path);
}

Status FaultInjectionEnv::ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) {
  MutexLock lock(&fault_mu_);
  if (read_error_ && FileExists(path)) return ErrnoStatus("read", path, EIO);
  return MemEnv::ReadRange(path, offset, n, out);
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  MutexLock lock(&fault_mu_);
  if (!Tick()) return CrashedStatus("rename " + from);
  return MemEnv::Rename(from, to);
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  MutexLock lock(&fault_mu_);
  if (!Tick()) return CrashedStatus("fsync " + StripSlash(dir));
  // A missing directory is reported as such (MemEnv's error, no effect) before any injected failure.
  if ((sync_error_ || dir_sync_error_) && DirExists(dir)) return ErrnoStatus("fsync", StripSlash(dir), EIO);
  return MemEnv::SyncDir(dir);
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  MutexLock lock(&fault_mu_);
  if (!Tick()) return CrashedStatus("unlink " + path);
  return MemEnv::RemoveFile(path);
}

Status FaultInjectionEnv::SetMtimeMicros(const std::string& path, int64_t micros) {
  MutexLock lock(&fault_mu_);
  if (!Tick()) return CrashedStatus("utimensat " + path);
  return MemEnv::SetMtimeMicros(path, micros);
}

void FaultInjectionEnv::set_write_budget(uint64_t bytes, StatusCode code) {
  MutexLock lock(&fault_mu_);
  has_budget_ = true;
  budget_ = bytes;
  budget_code_ = code;
}

void FaultInjectionEnv::clear_write_budget() {
  MutexLock lock(&fault_mu_);
  has_budget_ = false;
}

void FaultInjectionEnv::set_read_error(bool on) {
  MutexLock lock(&fault_mu_);
  read_error_ = on;
}

void FaultInjectionEnv::set_sync_error(bool on) {
  MutexLock lock(&fault_mu_);
  sync_error_ = on;
}

void FaultInjectionEnv::set_dir_sync_error(bool on) {
  MutexLock lock(&fault_mu_);
  dir_sync_error_ = on;
}

void FaultInjectionEnv::set_crash_after(int64_t n) {
  MutexLock lock(&fault_mu_);
  crash_at_ = calls_ + n;
}

bool FaultInjectionEnv::crashed() const {
  MutexLock lock(&fault_mu_);
  return crashed_;
}

int64_t FaultInjectionEnv::mutating_calls() const {
  MutexLock lock(&fault_mu_);
  return calls_;
}

void FaultInjectionEnv::PowerLoss() {
  MutexLock lock(&fault_mu_);
  MemEnv::PowerLoss();
  crashed_ = false;
  crash_at_ = -1;
}

}  // namespace ember
