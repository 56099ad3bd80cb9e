// A one-line progress bar with ETA for long benchmark passes. On a TTY it redraws in place; elsewhere
// (CI logs, pipes) it prints one plain line per step so logs stay readable. Time comes from an Env's
// monotonic clock, so tests drive it with a simulated one. Not thread-safe.
#pragma once

#include <cstdio>
#include <string>

#include "util/env.h"

namespace ember::bench {

class Progress {
 public:
  // clock: null means Env::Default(); it must outlive the bar.
  Progress(int total, bool tty, std::FILE* out, Env* clock = nullptr);

  // One unit done; `label` says what just finished ("tiny.gguf ember round 3/5").
  void Step(const std::string& label);
  // Grows the total (extra stability rounds are not known up front).
  void AddWork(int units) { total_ += units; }
  void Finish();

  // "[#####.....] 12/40 ETA 3m12s": exposed for tests.
  std::string Line(const std::string& label) const;
  int done() const { return done_; }
  int total() const { return total_; }

 private:
  int total_, done_ = 0;
  bool tty_;
  std::FILE* out_;
  double Now() const { return static_cast<double>(clock_->MonotonicMicros()) / 1e6; }
  Env* clock_;
  double start_;
};

// "45s", "3m12s", "1h04m".
std::string FormatDuration(double seconds);

}  // namespace ember::bench
