// Progress of long work (writing a model, mapping or hashing gigabytes, benchmark rounds, checking a
// cache) on a terminal: one line redrawn in place on stderr,
//
//   loading model [##########..............]  42%  190/450 MiB  ETA 3s  blk.7
//
// and nothing at all when the stream is not a terminal (a pipe, a CI log) or the command prints --json:
// the caller decides once (ShowProgress) and a disabled bar is a no-op. Library code never draws: it
// takes a ProgressFn and calls it at a coarse grain (per tensor, per 64 MiB chunk, per round), so the hot
// path pays nothing and the command line decides how to show it.
//
// Time comes from an Env's monotonic clock, so tests drive the bar with a simulated one. Redraws are
// rate-limited (redraw_us) and the first one waits show_after_us, so work that ends quickly prints
// nothing even on a terminal. Thread-safety: none; one thread reports (the one doing the work).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "util/env.h"

namespace ember {

// Units done out of total (total may grow between calls). Called on the working thread.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

class ProgressBar {
 public:
  enum class Unit { kCount, kBytes };  // "12/40" (large: "130M/434M") or "190/450 MiB"
  struct Options {
    bool enabled = false;             // usually ShowProgress(json); false: every call is a no-op
    std::FILE* out = stderr;
    Env* env = nullptr;               // the clock; null: Env::Default()
    Unit unit = Unit::kCount;
    int64_t redraw_us = 100'000;      // at most ten redraws a second
    int64_t show_after_us = 300'000;  // quiet for work shorter than this
    int width = 0;                    // columns; 0: the terminal's (80 if unknown)
  };

  ProgressBar(std::string title, uint64_t total, Options options);
  ~ProgressBar();  // Finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Update(uint64_t done);                            // absolute
  void Advance(uint64_t n = 1, std::string_view label = {});  // label: what just finished or runs now
  void SetLabel(std::string_view label);
  void SetTotal(uint64_t total);
  void AddTotal(uint64_t n) { SetTotal(total_ + n); }
  // Prints one line of text to `to` (null: the bar's stream) above the bar: the bar is cleared first
  // and redrawn after, so log lines and the bar do not mix on one row. When disabled, prints the line.
  void Log(std::string_view line, std::FILE* to = nullptr);
  // Draws the final state (if the bar was shown) and ends its line; later calls do nothing.
  void Finish();

  // A ProgressFn that moves this bar (which must outlive it).
  ProgressFn Callback();

  // The text of the bar now, without control characters (exposed for tests).
  std::string Line() const;
  bool enabled() const { return opts_.enabled; }
  bool shown() const { return shown_; }
  uint64_t done() const { return done_; }
  uint64_t total() const { return total_; }

 private:
  void MaybeDraw(bool force);  // force: ignore the rate limit and the show delay
  void Draw();
  int64_t Now() const { return env_->MonotonicMicros(); }

  std::string title_, label_;
  uint64_t total_, done_ = 0;
  Options opts_;
  Env* env_;
  int64_t start_us_, last_draw_us_ = 0, end_us_ = 0;
  bool shown_ = false, finished_ = false;
};

// Null-safe steps for code that takes an optional bar (benchmarks: one unit per round).
inline void AdvanceBar(ProgressBar* bar, std::string_view label) {
  if (bar != nullptr) bar->Advance(1, label);
}
inline void LabelBar(ProgressBar* bar, std::string_view label) {
  if (bar != nullptr) bar->SetLabel(label);
}

// True when progress should be drawn on stderr: not --json, stderr a terminal, TERM not "dumb".
bool ShowProgress(bool json = false);
// True when `f` is a terminal that can redraw a line (isatty and TERM is not "dumb").
bool IsInteractiveTerminal(std::FILE* f);

// "45s", "3m12s", "1h04m"; "?" for a negative or non-finite value.
std::string FormatDuration(double seconds);

}  // namespace ember
