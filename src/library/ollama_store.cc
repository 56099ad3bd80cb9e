#include "library/ollama_store.h"

#include <vector>

#include "library/folder_walk.h"
#include "library/gguf_describe.h"
#include "library/ollama_manifest.h"

namespace ember::library {
namespace {

constexpr const char* kDefaultRegistry = "registry.ollama.ai";

StatusOr<OllamaManifest> ReadManifest(const std::string& path, Env* env) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> map, env->MapFile(path));  // the parser bounds its size
  return ParseOllamaManifest(std::string_view(reinterpret_cast<const char*>(map->data()), map->size()));
}

// The row of one manifest: its blob described, or why there is nothing to describe.
ModelRecord DescribeManifest(const std::string& root, const std::string& manifest_path, Env* env) {
  ModelRecord r;
  r.format = "gguf";
  r.path = manifest_path;
  StatusOr<OllamaManifest> m = ReadManifest(manifest_path, env);
  if (!m.ok()) {
    r.why_not = "manifest: " + m.status().message();
    return r;
  }
  const std::string blob = JoinPath(JoinPath(root, "blobs"), m->model_blob);
  StatusOr<PathInfo> info = env->Stat(blob, /*follow_symlinks=*/true);
  if (!info.ok() || info->type != PathInfo::Type::kFile) {
    r.path = blob;
    r.why_not = "blob " + m->model_blob + " is missing (the manifest names it)";
    return r;
  }
  r = DescribeGguf({blob}, 0, env);
  if (m->model_size != 0 && r.size_bytes != m->model_size) {
    r.runnable = false;
    r.why_not = "blob is " + std::to_string(r.size_bytes) + " bytes, the manifest says " +
                std::to_string(m->model_size) + " (an unfinished pull?)";
  } else if (m->has_adapter && r.runnable) {
    r.runnable = false;
    r.why_not = "the model has a LoRA adapter layer, which ember does not apply";
  }
  return r;
}

}  // namespace

std::string OllamaModelName(const std::string& registry, const std::string& name_space, const std::string& model,
                            const std::string& tag) {
  std::string name;
  if (registry != kDefaultRegistry) name = registry + "/" + name_space + "/";
  else if (name_space != "library") name = name_space + "/";
  return name + model + ":" + tag;
}

void ScanOllamaStore(const std::string& root, ModelSource source, ScanState* state) {
  FolderWalker walker(state);
  const std::string manifests = JoinPath(root, "manifests");
  if (!state->env()->DirExists(manifests)) {
    state->Warn(root + " has no manifests folder (not an Ollama store?)");
    return;
  }
  // Tags are the files three folders below manifests/: <registry>/<namespace>/<model>/<tag>.
  walker.Walk(manifests, 3, [&](const std::string& dir, int depth, const std::vector<DirEntry>& entries) {
    if (depth != 3) return;
    // dir is manifests + "/registry/namespace/model", joined by the walk (names hold no '/').
    const std::string rel = dir.substr(JoinPath(manifests, "").size());
    const size_t a = rel.find('/');
    const size_t b = rel.find('/', a + 1);
    EMBER_CHECK(a != std::string::npos && b != std::string::npos);
    const std::string registry = rel.substr(0, a);
    const std::string name_space = rel.substr(a + 1, b - a - 1);
    const std::string model = rel.substr(b + 1);
    for (const DirEntry& e : entries) {
      if (e.kind != DirEntry::Kind::kFile) continue;
      ModelRecord r = DescribeManifest(root, JoinPath(dir, e.name), state->env());
      r.name = OllamaModelName(registry, name_space, model, e.name);
      r.source = source;
      if (!state->Add(std::move(r))) return;
    }
  });
}

}  // namespace ember::library
