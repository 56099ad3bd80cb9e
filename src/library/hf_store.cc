#include "library/hf_store.h"

#include <algorithm>
#include <set>
#include <vector>

#include "library/folder_models.h"
#include "library/folder_walk.h"

namespace ember::library {
namespace {

// A revision name as refs/main holds it (40 hex digits, in practice): short, one line, no '/'.
constexpr size_t kMaxRefBytes = 256;

std::string ReadRef(const std::string& path, Env* env) {
  StatusOr<std::unique_ptr<MappedRegion>> map = env->MapFile(path);
  if (!map.ok() || (*map)->size() > kMaxRefBytes) return "";
  std::string ref(reinterpret_cast<const char*>((*map)->data()), (*map)->size());
  while (!ref.empty() && (ref.back() == '\n' || ref.back() == '\r' || ref.back() == ' ')) ref.pop_back();
  return ref.find('/') == std::string::npos ? ref : "";
}

// The revisions under snapshots/, the one refs/main names first, the rest in name order.
std::vector<std::string> SnapshotOrder(const std::vector<DirEntry>& snapshots, const std::string& main_rev) {
  std::vector<std::string> order;
  for (const DirEntry& e : snapshots) {
    if (e.kind == DirEntry::Kind::kDir) order.push_back(e.name);
  }
  const auto it = std::find(order.begin(), order.end(), main_rev);
  if (it != order.end()) std::rotate(order.begin(), it, it + 1);
  return order;
}

void ScanRepo(const std::string& repo_dir, const std::string& repo_id, ModelSource source, FolderWalker* walker,
              ScanState* state) {
  const std::string snapshots_dir = JoinPath(repo_dir, "snapshots");
  std::vector<DirEntry> snapshots;
  if (!state->env()->DirExists(snapshots_dir) || !walker->List(snapshots_dir, &snapshots)) return;
  const std::string main_rev = ReadRef(JoinPath(JoinPath(repo_dir, "refs"), "main"), state->env());
  std::set<std::string> seen;  // paths inside the snapshot already listed from a newer revision
  for (const std::string& rev : SnapshotOrder(snapshots, main_rev)) {
    const std::string snapshot = JoinPath(snapshots_dir, rev);
    walker->Walk(snapshot, state->limits().max_depth, [&](const std::string& dir, int depth,
                                                          const std::vector<DirEntry>& entries) {
      const std::string rel = depth == 0 ? "" : dir.substr(JoinPath(snapshot, "").size());
      std::vector<DirEntry> fresh;
      for (const DirEntry& e : entries) {
        if (e.kind != DirEntry::Kind::kDir && seen.insert(JoinPath(rel, e.name)).second) fresh.push_back(e);
      }
      FolderNaming naming;
      naming.gguf_prefix = repo_id + ":" + (rel.empty() ? "" : rel + "/");
      naming.folder_name = rel.empty() ? repo_id : repo_id + ":" + rel;
      AddFolderModels(dir, fresh, source, naming, state);
    });
  }
}

}  // namespace

std::optional<std::string> HfRepoId(const std::string& folder) {
  constexpr std::string_view kPrefix = "models--";
  if (folder.size() <= kPrefix.size() || folder.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  const std::string id = folder.substr(kPrefix.size());
  const size_t sep = id.find("--");
  if (sep == std::string::npos) return id;
  if (sep == 0 || sep + 2 == id.size()) return std::nullopt;
  return id.substr(0, sep) + "/" + id.substr(sep + 2);
}

void ScanHfHubCache(const std::string& root, ModelSource source, ScanState* state) {
  FolderWalker walker(state);
  std::vector<DirEntry> repos;
  if (!walker.List(root, &repos)) return;
  for (const DirEntry& e : repos) {
    if (state->full() || walker.exhausted()) return;
    const std::optional<std::string> id = HfRepoId(e.name);
    if (e.kind != DirEntry::Kind::kDir || !id) continue;
    ScanRepo(JoinPath(root, e.name), *id, source, &walker, state);
  }
}

}  // namespace ember::library
