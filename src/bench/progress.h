// A one-line progress bar with ETA for long benchmark passes. On a TTY it redraws in place; elsewhere
// (CI logs, pipes) it prints one plain line per step so logs stay readable. Time comes from the caller's
// clock function, so tests drive it without sleeping. Not thread-safe.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace ember::bench {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  Progress(int total, bool tty, std::FILE* out, Clock clock);

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
  Clock clock_;
  double start_;
};

// "45s", "3m12s", "1h04m".
std::string FormatDuration(double seconds);

}  // namespace ember::bench
