#include "library/scan_state.h"

namespace ember::library {

bool ScanState::Add(ModelRecord record) {
  if (full()) {
    if (!warned_full_) {
      // Past the warning cap too: this one says the list is incomplete.
      warnings_.push_back("stopped listing after " + std::to_string(limits_.max_models) +
                          " models (the scan's bound)");
      warned_full_ = true;
    }
    return false;
  }
  models_.push_back(std::move(record));
  return true;
}

void ScanState::Warn(std::string message) {
  if (warnings_.size() < kMaxWarnings) {
    warnings_.push_back(std::move(message));
  } else {
    ++dropped_warnings_;
  }
}

std::vector<std::string> ScanState::TakeWarnings() {
  std::vector<std::string> out = std::move(warnings_);
  if (dropped_warnings_ > 0) out.push_back("... and " + std::to_string(dropped_warnings_) + " more warnings");
  return out;
}

}  // namespace ember::library
