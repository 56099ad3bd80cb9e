#include "bench/progress.h"

#include <algorithm>
#include <cmath>

namespace ember::bench {

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = std::lround(s);
  if (t < 60) std::snprintf(buf, sizeof(buf), "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

Progress::Progress(int total, bool tty, std::FILE* out, Env* clock)
    : total_(std::max(total, 0)), tty_(tty), out_(out), clock_(clock != nullptr ? clock : Env::Default()), start_(Now()) {}

std::string Progress::Line(const std::string& label) const {
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? std::min(kWidth, done_ * kWidth / total_) : kWidth;
  std::string bar(static_cast<size_t>(kWidth + 2), '.');
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  const double elapsed = Now() - start_;
  // Linear ETA from the average step so far; unknown until the first step finishes.
  std::string eta = done_ > 0 ? FormatDuration(elapsed / done_ * std::max(total_ - done_, 0)) : "?";
  return bar + " " + std::to_string(done_) + "/" + std::to_string(total_) + " ETA " + eta + "  " + label;
}

void Progress::Step(const std::string& label) {
  ++done_;
  if (done_ > total_) total_ = done_;
  if (!out_) return;
  if (tty_)
    std::fprintf(out_, "\r\033[K%s", Line(label).c_str());
  else
    std::fprintf(out_, "%s\n", Line(label).c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  if (out_ && tty_) std::fprintf(out_, "\n");
}

}  // namespace ember::bench
