#include "library/folder_walk.h"

#include <algorithm>

namespace ember::library {
namespace {

DirEntry::Kind Classify(Env* env, const std::string& path) {
  StatusOr<PathInfo> own = env->Stat(path, /*follow_symlinks=*/false);
  if (!own.ok()) return DirEntry::Kind::kBroken;
  switch (own->type) {
    case PathInfo::Type::kFile: return DirEntry::Kind::kFile;
    case PathInfo::Type::kDir: return DirEntry::Kind::kDir;
    case PathInfo::Type::kOther: return DirEntry::Kind::kOther;
    case PathInfo::Type::kSymlink: break;
  }
  StatusOr<PathInfo> target = env->Stat(path, /*follow_symlinks=*/true);
  if (!target.ok()) return DirEntry::Kind::kBroken;
  if (target->type == PathInfo::Type::kFile) return DirEntry::Kind::kFile;
  if (target->type == PathInfo::Type::kDir) return DirEntry::Kind::kDirLink;
  return DirEntry::Kind::kOther;
}

}  // namespace

std::string BaseName(const std::string& path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;
  const size_t slash = path.rfind('/', end - 1);
  return slash == std::string::npos ? path.substr(0, end) : path.substr(slash + 1, end - slash - 1);
}

StatusOr<uint64_t> FileSizeFollowingLinks(const std::string& path, Env* env) {
  if (StatusOr<uint64_t> size = env->FileSize(path); size.ok()) return size;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> map, env->MapFile(path));
  return static_cast<uint64_t>(map->size());
}

bool FolderWalker::List(const std::string& dir, std::vector<DirEntry>* entries) {
  entries->clear();
  if (exhausted_) return false;
  StatusOr<std::vector<std::string>> names = state_->env()->GetChildren(dir);
  if (!names.ok()) {
    state_->Warn("cannot list " + dir + ": " + names.status().message());
    return false;
  }
  std::sort(names->begin(), names->end());
  if (names->size() > entries_left_) {
    // The folder is cut at the bound, not skipped whole: its first entries still count.
    names->resize(entries_left_);
    exhausted_ = true;
    state_->Warn("stopped at " + dir + ": looked at " + std::to_string(state_->limits().max_entries) +
                 " directory entries under this location (the scan's bound)");
  }
  entries_left_ -= names->size();
  entries->reserve(names->size());
  for (std::string& name : *names) {
    const DirEntry::Kind kind = Classify(state_->env(), JoinPath(dir, name));
    entries->push_back({std::move(name), kind});
  }
  return true;
}

void FolderWalker::Walk(const std::string& root, int max_depth, const FolderVisit& visit) {
  WalkFrom(root, 0, max_depth, visit);
}

void FolderWalker::WalkFrom(const std::string& dir, int depth, int max_depth, const FolderVisit& visit) {
  if (state_->full() || exhausted_) return;
  std::vector<DirEntry> entries;
  if (!List(dir, &entries)) return;
  visit(dir, depth, entries);
  for (const DirEntry& e : entries) {
    if (e.kind != DirEntry::Kind::kDir) continue;
    if (depth >= max_depth) {
      state_->Warn("not looking below " + dir + ": " + std::to_string(max_depth) +
                   " folder levels under this location (the scan's bound)");
      return;
    }
    WalkFrom(JoinPath(dir, e.name), depth + 1, max_depth, visit);
  }
}

}  // namespace ember::library
