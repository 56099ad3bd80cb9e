#include "server/engine_model_loader.h"

#include <algorithm>
#include <filesystem>

#include "cache/cache_options.h"
#include "engine/engine.h"
#include "library/model_catalog.h"
#include "model/model.h"
#include "server/engine_backend.h"
#include "session/session_cache.h"

namespace ember::server {

namespace {

// Engine::Load's own default when --ctx-size is 0.
constexpr int64_t kMaxDefaultContext = 32768;

int64_t ServedContext(const ServeOptions& o, int64_t trained) {
  if (o.ctx_size > 0) return o.ctx_size;
  return trained > 0 ? std::min<int64_t>(trained, kMaxDefaultContext) : 0;
}

ModelSpec SpecOf(const library::ModelRecord& r, const ServeOptions& o) {
  ModelSpec s;
  s.name = r.name;
  s.path = r.path;
  s.source = library::ModelSourceName(r.source);
  s.runnable = r.runnable;
  s.why_not = r.why_not;
  s.arch = r.arch;
  s.quant = r.quant;
  s.size_bytes = r.size_bytes;
  s.parameters = r.parameters;
  s.context_length = ServedContext(o, r.context_length);
  return s;
}

// MODEL as the library describes it (the file alone: its folder is not scanned).
ModelSpec SpecOfModelArg(const ServeOptions& options) {
  const std::filesystem::path path(options.model_path);
  ModelSpec s = SpecOf(library::DescribeModelFile(options.model_path), options);
  s.name = path.stem().string();
  s.path = options.model_path;
  s.source = "MODEL";
  return s;
}

}  // namespace

StatusOr<ModelCost> EngineModelLoader::Estimate(const ModelSpec& spec) {
  // The header and the tensor table only: the weights stay unread (mapped, not faulted in). The size is
  // the mapped file's: a model path may be a link (Hugging Face's snapshots are links to their blobs),
  // which Env::FileSize, made for cache files, refuses.
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(spec.path));
  const uint64_t file_bytes = model->gguf().file_size();
  const EngineOptions defaults;
  const KvConfig kv = model->MakeKvConfig(defaults.kv_dtype, defaults.kv_block_size);
  const uint64_t per_position = KvBytesPerPosition(kv);
  const int64_t n_ctx = ServedContext(base_, model->config().n_ctx_train);
  ModelCost c;
  c.weight_bytes = file_bytes;
  if (!base_.kv_budget.empty()) {
    EMBER_ASSIGN_OR_RETURN(size_t b, ParseByteSize(base_.kv_budget));
    c.min_kv_bytes = c.want_kv_bytes = b;
    return c;
  }
  c.min_kv_bytes = per_position * static_cast<uint64_t>(std::max<int64_t>(n_ctx, 1) + defaults.kv_block_size);
  c.want_kv_bytes = c.min_kv_bytes * static_cast<uint64_t>(std::max(base_.parallel, 1));
  return c;
}

StatusOr<std::unique_ptr<InferenceBackend>> EngineModelLoader::Load(const ModelSpec& spec, uint64_t kv_budget_bytes) {
  ServeOptions o = base_;
  o.model_path = spec.path;
  o.model_alias = spec.name;
  o.kv_budget = std::to_string(kv_budget_bytes);
  return CreateEngineBackend(o);
}

std::vector<ModelSpec> FindServedModels(const ServeOptions& options) {
  std::vector<ModelSpec> specs;
  if (!options.model_path.empty()) specs.push_back(SpecOfModelArg(options));
  library::ScanOptions scan;
  scan.models_dirs = options.models_dirs;
  scan.data_dir = options.models_data_dir;
  scan.include_stores = options.model_stores;
  scan.home = options.models_home;
  for (const library::ModelRecord& r : library::ScanModels(scan)) {
    const bool taken = std::any_of(specs.begin(), specs.end(), [&](const ModelSpec& s) { return s.name == r.name; });
    if (!taken) specs.push_back(SpecOf(r, options));
  }
  return specs;
}

}  // namespace ember::server
