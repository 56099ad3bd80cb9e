// Loads FakeBackends as the router's models: `ember serve --fake-models a,b` (several scripted models
// without a model file, for the HTTP tests of model selection) and the router's unit tests. Each model is
// a FakeBackend with `backend` options and its name as model_id; its cost against the memory budget is
// `weight_bytes` + a KV budget of `kv_bytes` (min = want).
#pragma once

#include <string>
#include <vector>

#include "server/fake_backend.h"
#include "server/model_loader.h"

namespace ember::server {

class FakeModelLoader final : public ModelLoader {
 public:
  struct Options {
    FakeBackend::Options backend;
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
  };
  explicit FakeModelLoader(Options options) : options_(std::move(options)) {}

  StatusOr<ModelCost> Estimate(const ModelSpec& spec) override;
  StatusOr<std::unique_ptr<InferenceBackend>> Load(const ModelSpec& spec, uint64_t kv_budget_bytes) override;

  // The specs of fake models with these names (runnable, source "fake", context from the options).
  std::vector<ModelSpec> Specs(const std::vector<std::string>& names) const;

 private:
  const Options options_;
};

}  // namespace ember::server
