// The router's models from the model library (library/model_catalog.h) and their loader on the real
// engine: `ember serve --models-dir DIR` or `ember serve` with no MODEL (docs/server.md, "Several models").
#pragma once

#include <vector>

#include "server/model_loader.h"
#include "server/serve_options.h"

namespace ember::server {

// Loads each model through CreateEngineBackend with the server's options (threads, --parallel,
// --ctx-size, the prompt cache and SSD flags) and the model's own path, name and granted KV budget.
//
// Cost (ModelCost): the weights are the file's size (Engine::Load maps and prefaults all of it). The KV
// budget is --kv-budget when given (min = want); else min is one full-context sequence (context x KV
// bytes per position, plus a block) and want is --parallel of them. The router grants between the two.
class EngineModelLoader final : public ModelLoader {
 public:
  explicit EngineModelLoader(ServeOptions base) : base_(std::move(base)) {}
  StatusOr<ModelCost> Estimate(const ModelSpec& spec) override;
  StatusOr<std::unique_ptr<InferenceBackend>> Load(const ModelSpec& spec, uint64_t kv_budget_bytes) override;

 private:
  const ServeOptions base_;
};

// The models to serve: a scan of options.models_dirs and options.data_dir, plus the other tools' stores
// under options.home when options.model_stores, and options.model_path (named by its stem) when given,
// first. Names are unique (the scan's names; MODEL's stem wins over a scanned file of the same name). Each
// spec's context_length is what a sequence will get once loaded (--ctx-size, else the model's, at most
// 32768).
std::vector<ModelSpec> FindServedModels(const ServeOptions& options);

}  // namespace ember::server
