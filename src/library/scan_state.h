// One scan's working state, shared by the store scanners (library-internal): the Env and the bounds,
// the models found so far, and the warnings. Not thread-safe: one scan runs on one thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "library/model_catalog.h"

namespace ember::library {

class ScanState {
 public:
  // Warnings kept; past this, one last line counts the rest.
  static constexpr size_t kMaxWarnings = 40;

  ScanState(Env* env, const ScanLimits& limits) : env_(env), limits_(limits) {}

  Env* env() const { return env_; }
  const ScanLimits& limits() const { return limits_; }

  // Adds a model; false, with one warning for the whole scan, once limits.max_models are listed.
  bool Add(ModelRecord record);
  bool full() const { return models_.size() >= limits_.max_models; }
  size_t count() const { return models_.size(); }
  void Warn(std::string message);

  std::vector<ModelRecord> TakeModels() { return std::move(models_); }
  // The warnings, the count of those dropped past kMaxWarnings last.
  std::vector<std::string> TakeWarnings();

 private:
  Env* const env_;
  const ScanLimits limits_;
  std::vector<ModelRecord> models_;
  std::vector<std::string> warnings_;
  size_t dropped_warnings_ = 0;
  bool warned_full_ = false;
};

}  // namespace ember::library
