// Per-op time accounting for `ember bench`: timers on the Env's monotonic clock that cost nothing when
// off (one virtual call per scope when on).
#pragma once

#include "util/env.h"

namespace ember {

struct OpTimes {
  bool enabled = false;
  Env* env = nullptr;  // the clock; null: Env::Default()
  double matmul_s = 0, attention_s = 0, norm_s = 0, rope_s = 0, other_s = 0;
  uint64_t expert_bytes = 0;  // MoE expert weights read (each chosen expert once per step)

  void Reset() {
    matmul_s = attention_s = norm_s = rope_s = other_s = 0;
    expert_bytes = 0;
  }
};

// Adds the scope's elapsed time to *slot when timing is enabled.
class OpTimer {
 public:
  OpTimer(const OpTimes* times, double* slot) : slot_(times && times->enabled ? slot : nullptr) {
    if (slot_) {
      env_ = times->env != nullptr ? times->env : Env::Default();
      t0_us_ = env_->MonotonicMicros();
    }
  }
  ~OpTimer() {
    if (slot_) slot_[0] += static_cast<double>(env_->MonotonicMicros() - t0_us_) / 1e6;
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  double* slot_;
  Env* env_ = nullptr;
  int64_t t0_us_ = 0;
};

}  // namespace ember
