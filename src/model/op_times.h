// Per-op wall-time accounting for `ember bench`: cheap steady_clock timers that cost nothing when off.
#pragma once

#include <chrono>

namespace ember {

struct OpTimes {
  bool enabled = false;
  double matmul_s = 0, attention_s = 0, norm_s = 0, rope_s = 0, other_s = 0;

  void Reset() { matmul_s = attention_s = norm_s = rope_s = other_s = 0; }
};

// Adds the scope's wall time to *slot when timing is enabled.
class OpTimer {
 public:
  OpTimer(const OpTimes* times, double* slot) : slot_(times && times->enabled ? slot : nullptr) {
    if (slot_) t0_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (slot_) slot_[0] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  double* slot_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ember
