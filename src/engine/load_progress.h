// Engine::Load with a progress bar over the weights' prefault, the slow part of loading a model that is
// not in the page cache:  "loading NAME [########........]  33%  150/450 MiB  ETA 4s".
// The caller decides whether it is drawn (bar.enabled: a terminal, not --json; util/progress.h).
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "util/progress.h"

namespace ember {

StatusOr<std::unique_ptr<Engine>> LoadEngineWithProgress(const std::string& path, EngineOptions options,
                                                         ProgressBar::Options bar);

}  // namespace ember
