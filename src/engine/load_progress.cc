#include "engine/load_progress.h"

#include <filesystem>

namespace ember {

StatusOr<std::unique_ptr<Engine>> LoadEngineWithProgress(const std::string& path, EngineOptions options,
                                                         ProgressBar::Options bar_options) {
  bar_options.unit = ProgressBar::Unit::kBytes;
  ProgressBar bar("loading " + std::filesystem::path(path).filename().string(), 0, bar_options);
  options.load_progress = bar.Callback();
  return Engine::Load(path, options);
}

}  // namespace ember
