// Elapsed time on an Env's monotonic clock: the one way product code and benchmarks measure a duration
// (docs/conventions.md "Time"), so a simulated clock (tests/support/sim_env.h) drives it too.
//
// Thread-safety: a Stopwatch is a value; reading it from several threads is fine, Reset is not.
#pragma once

#include <cstdint>

#include "util/env.h"

namespace ember {

class Stopwatch {
 public:
  // Starts now on env's clock (null: Env::Default()).
  explicit Stopwatch(Env* env = nullptr) : env_(env != nullptr ? env : Env::Default()), start_us_(env_->MonotonicMicros()) {}

  int64_t ElapsedMicros() const { return env_->MonotonicMicros() - start_us_; }
  double ElapsedSeconds() const { return static_cast<double>(ElapsedMicros()) / 1e6; }
  double ElapsedMillis() const { return static_cast<double>(ElapsedMicros()) / 1e3; }
  // Restarts from now.
  void Reset() { start_us_ = env_->MonotonicMicros(); }
  int64_t start_micros() const { return start_us_; }

 private:
  Env* env_;
  int64_t start_us_;
};

}  // namespace ember
