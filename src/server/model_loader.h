// What the model router (model_router.h) knows of a model before loading it, and the loader seam that
// turns one into a running InferenceBackend. The router is engine-free (the fuzz build compiles it
// without the engine): EngineModelLoader (engine_model_loader.h) loads GGUF files, FakeModelLoader
// (fake_model_loader.h) makes FakeBackends for `--fake-models` and the tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/backend.h"
#include "util/status.h"

namespace ember::server {

// One model the server can serve, as the model library found it (library/model_catalog.h).
struct ModelSpec {
  std::string name;            // what a request's `model` names; unique among the served models
  std::string path;            // the GGUF file ("" for a fake)
  std::string source;          // where it was found: "models-dir", "ember", "ollama", ... ("fake", "MODEL")
  bool runnable = true;
  std::string why_not;         // !runnable: one line saying why
  std::string arch;            // "llama", ... ("" unknown)
  std::string quant;           // "Q8_0", ...
  uint64_t size_bytes = 0;     // on disk
  uint64_t parameters = 0;
  int64_t context_length = 0;  // positions a sequence may hold once loaded (0 unknown)
};

// What loading a model costs against the server's memory budget (docs/server.md, "Several models"):
// its weights plus a KV budget between `min_kv_bytes` (one full-context sequence: less and a request
// that fits the context could never run) and `want_kv_bytes` (--parallel full contexts, or --kv-budget).
struct ModelCost {
  uint64_t weight_bytes = 0;
  uint64_t min_kv_bytes = 0;
  uint64_t want_kv_bytes = 0;
};

// Thread-safe: the router calls it from the HTTP worker that triggered a load, several loads at once
// (different models). Neither call holds a router lock.
class ModelLoader {
 public:
  virtual ~ModelLoader() = default;
  // Reads what is needed to size the model (its header), not the weights. An error fails the load.
  virtual StatusOr<ModelCost> Estimate(const ModelSpec& spec) = 0;
  // Loads the model with a KV budget of `kv_budget_bytes` (between the estimate's min and want). The
  // backend's model_id() must be spec.name.
  virtual StatusOr<std::unique_ptr<InferenceBackend>> Load(const ModelSpec& spec, uint64_t kv_budget_bytes) = 0;
};

}  // namespace ember::server
