#include "server/engine_backend.h"

namespace ember::server {

StatusOr<std::unique_ptr<InferenceBackend>> CreateEngineBackend(const ServeOptions& options) {
  return Unimplemented("serving a model (" + options.model_path +
                       ") needs the engine, which is not wired in yet; use `ember serve --fake`");
}

}  // namespace ember::server
