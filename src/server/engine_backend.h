// The factory `ember serve MODEL` calls: loads the Engine, opens the TieredCache (RAM, and the SSD tier
// unless disabled or refused) and serves Generate through BatchedSession and one BatchRunner
// (engine_backend.cc).
#pragma once

#include <memory>

#include "server/backend.h"
#include "server/serve_options.h"

namespace ember::server {

StatusOr<std::unique_ptr<InferenceBackend>> CreateEngineBackend(const ServeOptions& options);

}  // namespace ember::server
