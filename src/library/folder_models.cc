#include "library/folder_models.h"

#include <algorithm>
#include <map>
#include <utility>

#include "library/gguf_describe.h"
#include "library/gguf_file_name.h"
#include "library/safetensors_folder.h"

namespace ember::library {
namespace {

// The parts of one split model found in a folder, by index.
struct SplitGroup {
  std::string stem;
  int count = 0;
  std::map<int, std::string> parts;
};

ModelRecord Unreadable(const std::string& path, const char* why) {
  ModelRecord r;
  r.path = path;
  r.format = "gguf";
  r.why_not = why;
  return r;
}

}  // namespace

void AddFolderModels(const std::string& dir, const std::vector<DirEntry>& entries, ModelSource source,
                     const FolderNaming& naming, ScanState* state) {
  Env* env = state->env();
  const auto add = [&](ModelRecord r, const std::string& name) {
    r.name = name;
    r.source = source;
    return state->Add(std::move(r));
  };
  // Split parts are gathered, then listed after the folder's other GGUF files.
  std::vector<SplitGroup> splits;
  std::map<std::pair<std::string, int>, size_t> split_index;
  for (const DirEntry& e : entries) {
    if (!HasGgufExtension(e.name) || e.kind == DirEntry::Kind::kDir || e.kind == DirEntry::Kind::kDirLink) continue;
    const std::string path = JoinPath(dir, e.name);
    const std::string name = naming.gguf_prefix + GgufStem(e.name);
    if (e.kind == DirEntry::Kind::kBroken) {
      if (!add(Unreadable(path, "a broken symbolic link, or a file that cannot be looked at"), name)) return;
      continue;
    }
    if (e.kind == DirEntry::Kind::kOther) {
      if (!add(Unreadable(path, "not a regular file"), name)) return;
      continue;
    }
    const std::optional<SplitName> split = ParseSplitName(e.name);
    if (!split) {
      if (!add(DescribeGguf({path}, 0, env), name)) return;
      continue;
    }
    const auto key = std::make_pair(split->stem, split->count);
    auto [it, fresh] = split_index.emplace(key, splits.size());
    if (fresh) splits.push_back({split->stem, split->count, {}});
    splits[it->second].parts.emplace(split->index, path);
  }
  for (const SplitGroup& g : splits) {
    std::vector<std::string> parts;
    for (const auto& [index, path] : g.parts) parts.push_back(path);
    // "-00001-of-00001" is a whole model under a split name.
    const int split_count = g.count > 1 ? g.count : 0;
    if (!add(DescribeGguf(parts, split_count, env), naming.gguf_prefix + g.stem)) return;
  }
  if (IsSafetensorsFolder(entries)) add(DescribeSafetensorsFolder(dir, entries, env), naming.folder_name);
}

void ScanModelFolder(const std::string& root, ModelSource source, ScanState* state) {
  FolderWalker walker(state);
  walker.Walk(root, state->limits().max_depth, [&](const std::string& dir, int, const std::vector<DirEntry>& entries) {
    AddFolderModels(dir, entries, source, FolderNaming{"", BaseName(dir)}, state);
  });
}

}  // namespace ember::library
