#include "coldtier/fault_env.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

namespace ember {

namespace {

std::string ParentOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string StripSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::string path, std::shared_ptr<FaultInjectionEnv::Inode> inode)
      : env_(env), path_(std::move(path)), inode_(std::move(inode)) {}
  Status Append(const void* data, size_t n) override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    return env_->AppendLocked(inode_, path_, data, n);
  }
  Status Sync() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    return env_->SyncLocked(inode_, path_);
  }
  Status Close() override { return Status::Ok(); }

 private:
  FaultInjectionEnv* env_;
  std::string path_;
  std::shared_ptr<FaultInjectionEnv::Inode> inode_;
};

class FaultLock final : public FileLock {
 public:
  FaultLock(FaultInjectionEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~FaultLock() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    env_->locks_.erase(path_);
  }

 private:
  FaultInjectionEnv* env_;
  std::string path_;
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

Status FaultInjectionEnv::CrashedStatus(const std::string& what) const {
  return IoError(what + ": simulated crash (the machine is down)");
}

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Tick()) return CrashedStatus("open " + path);
  if (dirs_.count(ParentOf(path)) == 0) return ErrnoStatus("open", path, ENOENT);
  if (live_.count(path) != 0 || dirs_.count(path) != 0) return ErrnoStatus("open", path, EEXIST);  // O_EXCL
  auto inode = std::make_shared<Inode>();
  inode->mtime = now_;
  live_[path] = inode;
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, path, inode));
}

Status FaultInjectionEnv::AppendLocked(const std::shared_ptr<Inode>& inode, const std::string& path,
                                       const void* data, size_t n) {
  if (!Tick()) return CrashedStatus("write " + path);
  const auto* p = static_cast<const uint8_t*>(data);
  size_t fits = n;
  if (has_budget_ && n > budget_) fits = static_cast<size_t>(budget_);
  inode->data.insert(inode->data.end(), p, p + fits);
  inode->mtime = now_;
  if (has_budget_) budget_ -= fits;
  if (fits < n) {
    if (budget_code_ == StatusCode::kNoSpace) return ErrnoStatus("write", path, ENOSPC);
    return Status(budget_code_, "write " + path + ": injected short write after " + std::to_string(fits) +
                                    " of " + std::to_string(n) + " bytes");
  }
  return Status::Ok();
}

Status FaultInjectionEnv::SyncLocked(const std::shared_ptr<Inode>& inode, const std::string& path) {
  if (!Tick()) return CrashedStatus("fsync " + path);
  if (sync_error_) return ErrnoStatus("fsync", path, EIO);
  inode->synced = inode->data.size();
  return Status::Ok();
}

StatusOr<std::vector<uint8_t>> FaultInjectionEnv::ReadFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("open", path, ENOENT);
  if (read_error_) return ErrnoStatus("read", path, EIO);
  return it->second->data;
}

Status FaultInjectionEnv::ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("open", path, ENOENT);
  if (read_error_) return ErrnoStatus("read", path, EIO);
  const std::vector<uint8_t>& d = it->second->data;
  if (offset > d.size() || n > d.size() - offset) {
    return Corrupt(path + ": truncated: need " + std::to_string(n) + " bytes at offset " +
                   std::to_string(offset) + ", file has " + std::to_string(d.size()));
  }
  if (n > 0) std::memcpy(out, d.data() + offset, n);
  return Status::Ok();
}

StatusOr<uint64_t> FaultInjectionEnv::FileSize(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("stat", path, ENOENT);
  return static_cast<uint64_t>(it->second->data.size());
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Tick()) return CrashedStatus("rename " + from);
  auto it = live_.find(from);
  if (it == live_.end()) return ErrnoStatus("rename", from + " -> " + to, ENOENT);
  if (dirs_.count(ParentOf(to)) == 0) return ErrnoStatus("rename", from + " -> " + to, ENOENT);
  live_[to] = it->second;
  live_.erase(from);
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir_in) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string dir = StripSlash(dir_in);
  if (!Tick()) return CrashedStatus("fsync " + dir);
  if (dirs_.count(dir) == 0) return ErrnoStatus("open", dir, ENOENT);
  if (sync_error_ || dir_sync_error_) return ErrnoStatus("fsync", dir, EIO);
  for (auto it = durable_.begin(); it != durable_.end();) {
    if (ParentOf(it->first) == dir && live_.count(it->first) == 0) {
      it = durable_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [path, inode] : live_) {
    if (ParentOf(path) == dir) durable_[path] = inode;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Tick()) return CrashedStatus("unlink " + path);
  if (live_.erase(path) == 0) return ErrnoStatus("unlink", path, ENOENT);
  return Status::Ok();
}

Status FaultInjectionEnv::CreateDirs(const std::string& dir_in) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string dir = StripSlash(dir_in);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos == dir.size() || dir[pos] == '/') dirs_.try_emplace(dir.substr(0, pos));  // new ones 0700
  }
  dirs_.try_emplace("");  // the parent of a relative top-level name
  return Status::Ok();
}

bool FaultInjectionEnv::DirExists(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  return dirs_.count(StripSlash(dir)) != 0;
}

StatusOr<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir_in) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string dir = StripSlash(dir_in);
  if (dirs_.count(dir) == 0) return ErrnoStatus("opendir", dir, ENOENT);
  std::vector<std::string> names;
  for (const auto& [d, attrs] : dirs_) {
    if (!d.empty() && d != dir && ParentOf(d) == dir) names.push_back(d.substr(d.find_last_of('/') + 1));
  }
  for (const auto& [path, inode] : live_) {
    if (ParentOf(path) == dir) names.push_back(path.substr(path.find_last_of('/') + 1));
  }
  return names;
}

StatusOr<int64_t> FaultInjectionEnv::GetMtimeMicros(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("stat", path, ENOENT);
  return it->second->mtime;
}

Status FaultInjectionEnv::SetMtimeMicros(const std::string& path, int64_t micros) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Tick()) return CrashedStatus("utimensat " + path);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("utimensat", path, ENOENT);
  it->second->mtime = micros;
  return Status::Ok();
}

int64_t FaultInjectionEnv::WallMicros() {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

bool FaultInjectionEnv::WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) {
  if (MonotonicMicros() < deadline_micros) {
    cv->WaitUntilSteady(mu, std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
  }
  return MonotonicMicros() >= deadline_micros;
}

StatusOr<PathInfo> FaultInjectionEnv::Stat(const std::string& path_in, bool /*follow_symlinks*/) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripSlash(path_in);
  PathInfo info;
  if (auto d = dirs_.find(path); d != dirs_.end()) {
    info.type = PathInfo::Type::kDir;
    info.uid = d->second.uid;
    info.mode = d->second.mode;
    return info;
  }
  if (live_.count(path) == 0) return ErrnoStatus("stat", path, ENOENT);
  info.type = PathInfo::Type::kFile;
  info.uid = kUid;
  info.mode = 0600;
  return info;
}

Status FaultInjectionEnv::SetPermissions(const std::string& path_in, uint32_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripSlash(path_in);
  if (auto d = dirs_.find(path); d != dirs_.end()) {
    d->second.mode = mode;
    return Status::Ok();
  }
  if (live_.count(path) == 0) return ErrnoStatus("open", path, ENOENT);
  return Status::Ok();  // file modes are not modelled
}

StatusOr<std::unique_ptr<FileLock>> FaultInjectionEnv::LockFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dirs_.count(ParentOf(path)) == 0) return ErrnoStatus("open", path, ENOENT);
  if (!locks_.insert(path).second) return FailedPrecondition("lock " + path + " is held by another holder");
  return std::unique_ptr<FileLock>(new FaultLock(this, path));
}

void FaultInjectionEnv::set_dir_attrs(const std::string& dir, uint32_t uid, uint32_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  DirAttrs& a = dirs_[StripSlash(dir)];
  a.uid = uid;
  a.mode = mode;
}

void FaultInjectionEnv::AdvanceMicros(int64_t us) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ += us;
}

void FaultInjectionEnv::set_write_budget(uint64_t bytes, StatusCode code) {
  std::lock_guard<std::mutex> lock(mu_);
  has_budget_ = true;
  budget_ = bytes;
  budget_code_ = code;
}

void FaultInjectionEnv::clear_write_budget() {
  std::lock_guard<std::mutex> lock(mu_);
  has_budget_ = false;
}

void FaultInjectionEnv::set_read_error(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  read_error_ = on;
}

void FaultInjectionEnv::set_sync_error(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  sync_error_ = on;
}

void FaultInjectionEnv::set_dir_sync_error(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  dir_sync_error_ = on;
}

void FaultInjectionEnv::set_crash_after(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = calls_ + n;
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

int64_t FaultInjectionEnv::mutating_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FaultInjectionEnv::PowerLoss() {
  std::lock_guard<std::mutex> lock(mu_);
  live_ = durable_;
  for (auto& [path, inode] : live_) inode->data.resize(inode->synced);
  crashed_ = false;
  crash_at_ = -1;
}

Status FaultInjectionEnv::FlipByte(const std::string& path, uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end() || offset >= it->second->data.size()) return NotFound("flip " + path);
  it->second->data[offset] ^= 0x5A;
  return Status::Ok();
}

Status FaultInjectionEnv::Truncate(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return NotFound("truncate " + path);
  Inode& inode = *it->second;
  inode.data.resize(std::min<size_t>(inode.data.size(), size));
  inode.synced = std::min(inode.synced, inode.data.size());
  return Status::Ok();
}

void FaultInjectionEnv::PutDurableFile(const std::string& path, std::vector<uint8_t> data) {
  std::lock_guard<std::mutex> lock(mu_);
  auto inode = std::make_shared<Inode>();
  inode->data = std::move(data);
  inode->synced = inode->data.size();
  inode->mtime = now_;
  live_[path] = inode;
  durable_[path] = inode;
}

std::vector<std::string> FaultInjectionEnv::AllFiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [path, inode] : live_) out.push_back(path);
  return out;
}

}  // namespace ember
