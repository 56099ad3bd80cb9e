#include "util/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

constexpr int kBarWidth = 24;

// Large counts (a model's parameters) in millions or thousands, so the line stays short.
std::string Count(uint64_t n, uint64_t scale, const char* suffix) {
  return std::to_string(n / scale) + suffix;
}

std::string Amount(uint64_t done, uint64_t total, ProgressBar::Unit unit) {
  char buf[64];
  if (unit == ProgressBar::Unit::kCount) {
    if (total >= 10'000'000) return Count(done, 1'000'000, "M") + "/" + Count(total, 1'000'000, "M");
    if (total >= 100'000) return Count(done, 1'000, "k") + "/" + Count(total, 1'000, "k");
    return std::to_string(done) + "/" + std::to_string(total);
  } else if (total >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f/%.1f GiB", done / 1073741824.0, total / 1073741824.0);
  } else if (total >= (10ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.0f/%.0f MiB", std::floor(done / 1048576.0), total / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f/%.1f MiB", done / 1048576.0, total / 1048576.0);
  }
  return buf;
}

int TerminalColumns(std::FILE* f) {
  winsize ws{};
  if (f != nullptr && ::ioctl(::fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

}  // namespace

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = std::lround(s);
  if (t < 60) std::snprintf(buf, sizeof(buf), "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

bool IsInteractiveTerminal(std::FILE* f) {
  if (f == nullptr || ::isatty(::fileno(f)) != 1) return false;
  const char* term = std::getenv("TERM");  // a dumb terminal cannot erase a line
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

bool ShowProgress(bool json) { return !json && IsInteractiveTerminal(stderr); }

ProgressBar::ProgressBar(std::string title, uint64_t total, Options options)
    : title_(std::move(title)),
      total_(total),
      opts_(options),
      env_(options.env != nullptr ? options.env : Env::Default()),
      start_us_(env_->MonotonicMicros()) {
  if (opts_.out == nullptr) opts_.enabled = false;
}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done) {
  done_ = done;
  if (done_ > total_) total_ = done_;
  MaybeDraw(false);
}

void ProgressBar::Advance(uint64_t n, std::string_view label) {
  if (!label.empty()) label_ = label;
  Update(done_ + n);
}

void ProgressBar::SetLabel(std::string_view label) {
  label_ = label;
  MaybeDraw(false);
}

void ProgressBar::SetTotal(uint64_t total) { total_ = std::max(total, done_); }

ProgressFn ProgressBar::Callback() {
  return [this](uint64_t done, uint64_t total) {
    SetTotal(total);
    Update(done);
  };
}

std::string ProgressBar::Line() const {
  const int filled = total_ > 0 ? static_cast<int>(std::min<uint64_t>(kBarWidth, done_ * kBarWidth / total_)) : 0;
  std::string line = title_ + " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", total_ > 0 ? static_cast<int>(done_ * 100 / total_) : 0);
  line += std::string(pct) + "  " + Amount(done_, total_, opts_.unit);
  const double elapsed = static_cast<double>((finished_ ? end_us_ : Now()) - start_us_) / 1e6;
  if (finished_ || (total_ > 0 && done_ >= total_)) {
    line += "  in " + FormatDuration(elapsed);
  } else {
    // Linear from the average rate so far; unknown until something is done.
    const double eta = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : -1;
    line += "  ETA " + FormatDuration(eta);
  }
  if (!label_.empty()) line += "  " + label_;
  return line;
}

void ProgressBar::MaybeDraw(bool force) {
  if (!opts_.enabled || finished_) return;
  const int64_t now = Now();
  if (!force) {
    if (now - start_us_ < opts_.show_after_us) return;
    if (shown_ && now - last_draw_us_ < opts_.redraw_us) return;
  }
  Draw();
  last_draw_us_ = now;
}

void ProgressBar::Draw() {
  std::string line = Line();
  const size_t cols = static_cast<size_t>(opts_.width > 0 ? opts_.width : TerminalColumns(opts_.out));
  // A line that wraps could not be erased by the next redraw.
  if (line.size() > cols - 1) line.resize(cols - 1);
  std::fprintf(opts_.out, "\r%s\033[K", line.c_str());
  std::fflush(opts_.out);
  shown_ = true;
}

void ProgressBar::Log(std::string_view line, std::FILE* to) {
  if (to == nullptr) to = opts_.out != nullptr ? opts_.out : stderr;
  const bool drawn = opts_.enabled && shown_ && !finished_;
  if (drawn) {
    std::fputs("\r\033[K", opts_.out);
    std::fflush(opts_.out);
  }
  std::fprintf(to, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(to);
  if (drawn) Draw();
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  end_us_ = Now();
  if (opts_.enabled && shown_) {
    Draw();
    std::fputc('\n', opts_.out);
    std::fflush(opts_.out);
  }
}

}  // namespace ember
