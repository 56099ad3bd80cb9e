// The factory `ember serve MODEL` calls to get the real engine behind the InferenceBackend interface.
// The engine owner fills in engine_backend.cc; until then it reports kUnimplemented and `ember serve`
// says so (use --fake to run the server without a model).
#pragma once

#include <memory>

#include "server/backend.h"
#include "server/serve_options.h"

namespace ember::server {

StatusOr<std::unique_ptr<InferenceBackend>> CreateEngineBackend(const ServeOptions& options);

}  // namespace ember::server
