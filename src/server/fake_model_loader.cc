#include "server/fake_model_loader.h"

namespace ember::server {

StatusOr<ModelCost> FakeModelLoader::Estimate(const ModelSpec& spec) {
  (void)spec;
  return ModelCost{options_.weight_bytes, options_.kv_bytes, options_.kv_bytes};
}

StatusOr<std::unique_ptr<InferenceBackend>> FakeModelLoader::Load(const ModelSpec& spec, uint64_t kv_budget_bytes) {
  (void)kv_budget_bytes;
  FakeBackend::Options o = options_.backend;
  o.model_id = spec.name;
  return std::unique_ptr<InferenceBackend>(std::make_unique<FakeBackend>(o));
}

std::vector<ModelSpec> FakeModelLoader::Specs(const std::vector<std::string>& names) const {
  std::vector<ModelSpec> specs;
  for (const std::string& name : names) {
    ModelSpec s;
    s.name = name;
    s.source = "fake";
    s.arch = "fake";
    s.context_length = options_.backend.context_length;
    specs.push_back(std::move(s));
  }
  return specs;
}

}  // namespace ember::server
