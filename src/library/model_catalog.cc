#include "library/model_catalog.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "format/ggml_types.h"
#include "format/gguf.h"
#include "format/model_summary.h"
#include "model/model.h"
#include "tokenizer/tokenizer_spec.h"

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

bool EndsWithGguf(const std::string& name) {
  if (name.size() < 5) return false;
  std::string ext = name.substr(name.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".gguf";
}

std::string UpperCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// Fills the metadata columns and the runnable verdict of one GGUF file.
ModelRecord Describe(const std::string& path, std::string name, ModelSource source, Env* env) {
  ModelRecord r;
  r.name = std::move(name);
  r.path = path;
  r.source = source;
  r.format = "gguf";
  if (StatusOr<uint64_t> size = env->FileSize(path); size.ok()) r.size_bytes = *size;
  StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path, env);
  if (!file.ok()) {
    r.why_not = file.status().message();
    return r;
  }
  if (StatusOr<ModelSummary> s = Summarize(**file); s.ok()) {
    r.arch = s->arch;
    r.parameters = s->n_params;
    r.quant = UpperCase(s->file_type);
    r.context_length = s->n_ctx;
  }
  Status st = CheckRunnable(path, env);
  r.runnable = st.ok();
  if (!st.ok()) r.why_not = st.message();
  return r;
}

// The GGUF files directly in `dir` (not below it).
void ScanFolder(const std::string& dir, ModelSource source, Env* env, std::vector<ModelRecord>* out) {
  StatusOr<std::vector<std::string>> children = env->GetChildren(dir);
  if (!children.ok()) return;
  std::sort(children->begin(), children->end());
  for (const std::string& child : *children) {
    if (!EndsWithGguf(child)) continue;
    const std::string path = dir + "/" + child;
    StatusOr<PathInfo> info = env->Stat(path, /*follow_symlinks=*/true);
    if (!info.ok() || info->type != PathInfo::Type::kFile) continue;
    out->push_back(Describe(path, child.substr(0, child.size() - 5), source, env));
  }
}

}  // namespace

Status CheckRunnable(const std::string& path, Env* env) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path, env));
  if (Status st = TokenizerSpecFromGguf(*file).status(); !st.ok()) return st;
  return Model::FromGguf(std::move(file)).status();
}

std::vector<ModelRecord> ScanModels(const ScanOptions& options) {
  std::vector<ModelRecord> found;
  for (const std::string& dir : options.models_dirs) ScanFolder(dir, ModelSource::kModelsDir, options.env, &found);
  if (!options.data_dir.empty()) ScanFolder(options.data_dir, ModelSource::kEmberData, options.env, &found);
  // Names are claimed in source order; a later clash is told apart by its source.
  std::map<std::string, int> taken;
  for (ModelRecord& r : found) {
    if (taken[r.name]++ > 0) r.name += std::string("@") + ModelSourceName(r.source);
  }
  std::sort(found.begin(), found.end(), [](const ModelRecord& a, const ModelRecord& b) { return a.name < b.name; });
  return found;
}

}  // namespace ember::library
