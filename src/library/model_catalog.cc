#include "library/model_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "library/folder_models.h"
#include "library/folder_walk.h"
#include "library/gguf_describe.h"
#include "library/gguf_file_name.h"
#include "library/hf_store.h"
#include "library/model_names.h"
#include "library/ollama_store.h"
#include "library/scan_state.h"
#include "library/store_roots.h"

namespace ember::library {

const char* ModelSourceName(ModelSource s) {
  switch (s) {
    case ModelSource::kModelsDir: return "models-dir";
    case ModelSource::kEmberData: return "ember";
    case ModelSource::kLlamaCpp: return "llama.cpp";
    case ModelSource::kLmStudio: return "lm-studio";
    case ModelSource::kOllama: return "ollama";
    case ModelSource::kHuggingFace: return "hf";
  }
  return "?";
}

namespace {

// Deeper than any store's layout needs; keeps the walk's recursion far from the stack's end.
constexpr int kMaxDepthCeiling = 32;

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// A folder the user names may itself be an Ollama store or a hub cache: read it as one.
enum class Layout { kFolder, kOllama, kHfHub };

Layout DetectLayout(const std::string& dir, ModelSource source, Env* env) {
  if (source == ModelSource::kOllama) return Layout::kOllama;
  if (source == ModelSource::kHuggingFace) return Layout::kHfHub;
  if (env->DirExists(JoinPath(dir, "manifests")) && env->DirExists(JoinPath(dir, "blobs"))) return Layout::kOllama;
  StatusOr<std::vector<std::string>> children = env->GetChildren(dir);
  if (children.ok() && std::any_of(children->begin(), children->end(), [&](const std::string& c) {
        return HfRepoId(c).has_value() && env->DirExists(JoinPath(JoinPath(dir, c), "snapshots"));
      })) {
    return Layout::kHfHub;
  }
  return Layout::kFolder;
}

void ScanRoot(const ScanLocation& where, ScanState* state) {
  switch (DetectLayout(where.path, where.source, state->env())) {
    case Layout::kOllama: return ScanOllamaStore(where.path, where.source, state);
    case Layout::kHfHub: return ScanHfHubCache(where.path, where.source, state);
    case Layout::kFolder: return ScanModelFolder(where.path, where.source, state);
  }
}

// Every folder to search, in order, each path once (the first mention wins).
std::vector<ScanLocation> Locations(const ScanOptions& o, std::vector<std::string>* warnings) {
  std::vector<ScanLocation> out;
  std::set<std::string> seen;
  const auto add = [&](ModelSource source, const std::string& path, const std::string& origin) {
    const std::string p = WithoutTrailingSlashes(path);
    if (p.empty() || !seen.insert(p).second) return;
    ScanLocation loc;
    loc.source = source;
    loc.path = p;
    loc.origin = origin;
    out.push_back(std::move(loc));
  };
  for (const std::string& dir : o.models_dirs) add(ModelSource::kModelsDir, dir, "--models-dir");
  add(ModelSource::kEmberData, o.data_dir, "data dir");
  if (o.include_stores) {
    const EnvVars vars = o.env_vars ? *o.env_vars : ProcessStoreVars();
    for (const StoreRoot& r : StoreRoots(vars, o.home, o.ollama_system_dirs, o.env, warnings)) {
      add(r.source, r.path, r.origin);
    }
  }
  return out;
}

}  // namespace

std::string DefaultDataDir(const std::string& xdg_data_home, const std::string& home) {
  // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (!xdg_data_home.empty() && xdg_data_home.front() == '/') return JoinPath(xdg_data_home, "ember");
  return home.empty() ? "" : JoinPath(home, ".local/share/ember");
}

ScanOptions ProcessScanOptions() {
  const auto var = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  ScanOptions o;
  o.home = var("HOME");
  o.data_dir = DefaultDataDir(var("XDG_DATA_HOME"), o.home);
  return o;
}

Status CheckRunnable(const std::string& path, Env* env) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path, env));
  return CheckRunnableGguf(std::move(file));
}

ModelRecord DescribeModelFile(const std::string& path, Env* env) {
  const std::optional<SplitName> split = ParseSplitName(BaseName(path));
  return DescribeGguf({path}, split && split->count > 1 ? split->count : 0, env);
}

ScanResult ScanLibrary(const ScanOptions& options) {
  ScanLimits limits = options.limits;
  limits.max_depth = std::clamp(limits.max_depth, 0, kMaxDepthCeiling);
  ScanState state(options.env, limits);
  ScanResult result;
  std::vector<std::string> root_warnings;
  result.locations = Locations(options, &root_warnings);
  for (std::string& w : root_warnings) state.Warn(std::move(w));
  for (ScanLocation& where : result.locations) {
    where.present = options.env->DirExists(where.path);
    if (!where.present || state.full()) continue;
    const size_t before = state.count();
    ScanRoot(where, &state);
    where.models = static_cast<int>(state.count() - before);
  }
  result.models = state.TakeModels();
  result.warnings = state.TakeWarnings();
  AssignUniqueNames(&result.models);
  std::sort(result.models.begin(), result.models.end(),
            [](const ModelRecord& a, const ModelRecord& b) { return a.name < b.name; });
  return result;
}

std::vector<ModelRecord> ScanModels(const ScanOptions& options) { return ScanLibrary(options).models; }

}  // namespace ember::library
