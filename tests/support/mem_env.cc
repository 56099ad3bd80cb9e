#include "support/mem_env.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
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

// MapFile's region: owns a copy of the bytes.
class MemRegion final : public MappedRegion {
 public:
  explicit MemRegion(std::unique_ptr<std::vector<uint8_t>> bytes)
      : MappedRegion(bytes->data(), bytes->size()), bytes_(std::move(bytes)) {}

 private:
  std::unique_ptr<std::vector<uint8_t>> bytes_;
};

}  // namespace

class MemEnv::MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(MemEnv* env, std::shared_ptr<Inode> inode) : env_(env), inode_(std::move(inode)) {}
  Status Append(const void* data, size_t n) override {
    MutexLock lock(&env_->mu_);
    const auto* p = static_cast<const uint8_t*>(data);
    inode_->data.insert(inode_->data.end(), p, p + n);
    inode_->mtime = env_->now_;
    return Status::Ok();
  }
  Status Sync() override {
    MutexLock lock(&env_->mu_);
    inode_->synced = inode_->data.size();
    return Status::Ok();
  }
  Status Close() override { return Status::Ok(); }

 private:
  MemEnv* env_;
  std::shared_ptr<Inode> inode_;
};

class MemEnv::MemLock final : public FileLock {
 public:
  MemLock(MemEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~MemLock() override {
    MutexLock lock(&env_->mu_);
    env_->locks_.erase(path_);
  }

 private:
  MemEnv* env_;
  std::string path_;
};

MemEnv::MemEnv() = default;
MemEnv::~MemEnv() = default;

StatusOr<std::unique_ptr<WritableFile>> MemEnv::NewWritableFile(const std::string& path) {
  MutexLock lock(&mu_);
  if (dirs_.count(ParentOf(path)) == 0) return ErrnoStatus("open", path, ENOENT);
  if (live_.count(path) != 0 || dirs_.count(path) != 0) return ErrnoStatus("open", path, EEXIST);  // O_EXCL
  auto inode = std::make_shared<Inode>();
  inode->mtime = now_;
  live_[path] = inode;
  return std::unique_ptr<WritableFile>(new MemWritableFile(this, inode));
}

StatusOr<std::vector<uint8_t>> MemEnv::ReadFile(const std::string& path) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("open", path, ENOENT);
  return it->second->data;
}

Status MemEnv::ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("open", path, ENOENT);
  const std::vector<uint8_t>& d = it->second->data;
  if (offset > d.size() || n > d.size() - offset) {
    return Corrupt(path + ": truncated: need " + std::to_string(n) + " bytes at offset " +
                   std::to_string(offset) + ", file has " + std::to_string(d.size()));
  }
  if (n > 0) std::memcpy(out, d.data() + offset, n);
  return Status::Ok();
}

StatusOr<uint64_t> MemEnv::FileSize(const std::string& path) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("stat", path, ENOENT);
  return static_cast<uint64_t>(it->second->data.size());
}

StatusOr<std::unique_ptr<MappedRegion>> MemEnv::MapFile(const std::string& path) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) {
    if (dirs_.count(StripSlash(path)) != 0) return InvalidArgument(path + ": not a regular file");
    return ErrnoStatus("open", path, ENOENT);
  }
  return std::unique_ptr<MappedRegion>(new MemRegion(std::make_unique<std::vector<uint8_t>>(it->second->data)));
}

Status MemEnv::Rename(const std::string& from, const std::string& to) {
  MutexLock lock(&mu_);
  auto it = live_.find(from);
  if (it == live_.end()) return ErrnoStatus("rename", from + " -> " + to, ENOENT);
  if (dirs_.count(ParentOf(to)) == 0) return ErrnoStatus("rename", from + " -> " + to, ENOENT);
  live_[to] = it->second;
  live_.erase(from);
  return Status::Ok();
}

Status MemEnv::SyncDir(const std::string& dir_in) {
  MutexLock lock(&mu_);
  std::string dir = StripSlash(dir_in);
  if (dirs_.count(dir) == 0) return ErrnoStatus("open", dir, ENOENT);
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

Status MemEnv::RemoveFile(const std::string& path) {
  MutexLock lock(&mu_);
  if (live_.erase(path) == 0) return ErrnoStatus("unlink", path, ENOENT);
  return Status::Ok();
}

Status MemEnv::CreateDirs(const std::string& dir_in) {
  MutexLock lock(&mu_);
  std::string dir = StripSlash(dir_in);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos == dir.size() || dir[pos] == '/') dirs_.try_emplace(dir.substr(0, pos));  // new ones 0700
  }
  dirs_.try_emplace("");  // the parent of a relative top-level name
  return Status::Ok();
}

bool MemEnv::DirExists(const std::string& dir) {
  MutexLock lock(&mu_);
  return dirs_.count(StripSlash(dir)) != 0;
}

StatusOr<std::vector<std::string>> MemEnv::GetChildren(const std::string& dir_in) {
  MutexLock lock(&mu_);
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

StatusOr<int64_t> MemEnv::GetMtimeMicros(const std::string& path) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("stat", path, ENOENT);
  return it->second->mtime;
}

Status MemEnv::SetMtimeMicros(const std::string& path, int64_t micros) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return ErrnoStatus("utimensat", path, ENOENT);
  it->second->mtime = micros;
  return Status::Ok();
}

int64_t MemEnv::WallMicros() {
  MutexLock lock(&mu_);
  return now_;
}

int64_t MemEnv::MonotonicMicros() {
  MutexLock lock(&mu_);
  return now_;
}

bool MemEnv::WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) {
  if (MonotonicMicros() < deadline_micros) {
    cv->WaitUntilSteady(mu, std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
  }
  return MonotonicMicros() >= deadline_micros;
}

StatusOr<PathInfo> MemEnv::Stat(const std::string& path_in, bool /*follow_symlinks*/) {
  MutexLock lock(&mu_);
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

Status MemEnv::SetPermissions(const std::string& path_in, uint32_t mode) {
  MutexLock lock(&mu_);
  const std::string path = StripSlash(path_in);
  if (auto d = dirs_.find(path); d != dirs_.end()) {
    d->second.mode = mode;
    return Status::Ok();
  }
  if (live_.count(path) == 0) return ErrnoStatus("open", path, ENOENT);
  return Status::Ok();  // file modes are not modelled
}

StatusOr<std::unique_ptr<FileLock>> MemEnv::LockFile(const std::string& path) {
  MutexLock lock(&mu_);
  if (dirs_.count(ParentOf(path)) == 0) return ErrnoStatus("open", path, ENOENT);
  if (!locks_.insert(path).second) return FailedPrecondition("lock " + path + " is held by another holder");
  return std::unique_ptr<FileLock>(new MemLock(this, path));
}

void MemEnv::set_dir_attrs(const std::string& dir, uint32_t uid, uint32_t mode) {
  MutexLock lock(&mu_);
  DirAttrs& a = dirs_[StripSlash(dir)];
  a.uid = uid;
  a.mode = mode;
}

void MemEnv::AdvanceMicros(int64_t us) {
  MutexLock lock(&mu_);
  now_ += us;
}

void MemEnv::PowerLoss() {
  MutexLock lock(&mu_);
  live_ = durable_;
  for (auto& [path, inode] : live_) inode->data.resize(inode->synced);
}

Status MemEnv::FlipByte(const std::string& path, uint64_t offset) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end() || offset >= it->second->data.size()) return NotFound("flip " + path);
  it->second->data[offset] ^= 0x5A;
  return Status::Ok();
}

Status MemEnv::Truncate(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return NotFound("truncate " + path);
  Inode& inode = *it->second;
  inode.data.resize(std::min<size_t>(inode.data.size(), size));
  inode.synced = std::min(inode.synced, inode.data.size());
  return Status::Ok();
}

void MemEnv::PutDurableFile(const std::string& path, std::vector<uint8_t> data) {
  MutexLock lock(&mu_);
  auto inode = std::make_shared<Inode>();
  inode->data = std::move(data);
  inode->synced = inode->data.size();
  inode->mtime = now_;
  live_[path] = inode;
  durable_[path] = inode;
}

bool MemEnv::FileExists(const std::string& path) const {
  MutexLock lock(&mu_);
  return live_.count(path) != 0;
}

std::vector<std::string> MemEnv::AllFiles() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [path, inode] : live_) out.push_back(path);
  return out;
}

}  // namespace ember
