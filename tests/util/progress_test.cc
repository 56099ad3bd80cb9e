// ProgressBar on a simulated clock, writing to a memory stream: what it draws, when, and that a disabled
// bar (not a terminal, --json) writes nothing at all.
#include "util/progress.h"

#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/sim_env.h"

namespace ember {
namespace {

// A FILE* whose bytes the test reads back.
class MemStream {
 public:
  MemStream() : f_(open_memstream(&buf_, &len_)) {}
  ~MemStream() {
    std::fclose(f_);
    std::free(buf_);
  }
  std::FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* f_;
};

class ProgressBarTest : public ::testing::Test {
 protected:
  ProgressBar::Options On(ProgressBar::Unit unit = ProgressBar::Unit::kCount) {
    return {.enabled = true, .out = out_.file(), .env = &clock_, .unit = unit, .width = 100};
  }
  testing::SimEnv clock_;
  MemStream out_;
};

TEST_F(ProgressBarTest, DisabledWritesNothing) {
  ProgressBar bar("work", 10, {.enabled = false, .out = out_.file(), .env = &clock_});
  clock_.AdvanceSeconds(5);
  bar.Advance(3, "a");
  bar.Update(9);
  bar.SetLabel("b");
  bar.Finish();
  EXPECT_EQ(out_.text(), "");
  EXPECT_FALSE(bar.shown());
  EXPECT_EQ(bar.done(), 9u);  // still counts: callers may read it
}

TEST_F(ProgressBarTest, LineShowsBarPercentAmountEtaAndLabel) {
  ProgressBar bar("work", 4, On());
  EXPECT_EQ(bar.Line(), "work [........................]   0%  0/4  ETA ?");
  clock_.AdvanceSeconds(10);
  bar.Advance(1, "first");
  EXPECT_EQ(bar.Line(), "work [######..................]  25%  1/4  ETA 30s  first");
  clock_.AdvanceSeconds(30);
  bar.Advance(3, "last");
  EXPECT_EQ(bar.Line(), "work [########################] 100%  4/4  in 40s  last");
}

TEST_F(ProgressBarTest, AmountsInBytesAndLargeCounts) {
  ProgressBar mib("load", 450ull << 20, On(ProgressBar::Unit::kBytes));
  mib.Update(190ull << 20);
  EXPECT_NE(mib.Line().find(" 42%  190/450 MiB  ETA "), std::string::npos) << mib.Line();
  ProgressBar gib("hash", 30ull << 30, On(ProgressBar::Unit::kBytes));
  gib.Update(3ull << 29);
  EXPECT_NE(gib.Line().find("1.5/30.0 GiB"), std::string::npos) << gib.Line();
  ProgressBar small("x", 3ull << 20, On(ProgressBar::Unit::kBytes));
  small.Update(1ull << 20);
  EXPECT_NE(small.Line().find("1.0/3.0 MiB"), std::string::npos) << small.Line();
  ProgressBar params("gen-model", 434'000'000, On());
  params.Update(130'500'000);
  EXPECT_NE(params.Line().find("130M/434M"), std::string::npos) << params.Line();
  ProgressBar entries("gc", 250'000, On());
  entries.Update(1'500);
  EXPECT_NE(entries.Line().find("1k/250k"), std::string::npos) << entries.Line();
}

TEST_F(ProgressBarTest, QuietUntilShowAfterThenRateLimited) {
  ProgressBar bar("work", 100, On());
  bar.Advance(1);
  clock_.Advance(299'000);
  bar.Advance(1);
  EXPECT_EQ(out_.text(), "") << "nothing before show_after_us";
  clock_.Advance(1'000);
  bar.Advance(1);
  const std::string first = out_.text();
  EXPECT_EQ(first, "\rwork [........................]   3%  3/100  ETA 10s\033[K");
  clock_.Advance(99'000);
  bar.Advance(1);
  EXPECT_EQ(out_.text(), first) << "a redraw within redraw_us is skipped";
  clock_.Advance(1'000);
  bar.Advance(1);
  const std::string text = out_.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2) << text;
  EXPECT_NE(text.find("5/100  ETA 8s"), std::string::npos) << text;
}

TEST_F(ProgressBarTest, FinishEndsTheLineOnlyIfTheBarWasShown) {
  {
    ProgressBar fast("fast", 2, On());
    fast.Advance(2);
    fast.Finish();
  }
  EXPECT_EQ(out_.text(), "") << "work that ends before show_after_us prints nothing";
  ProgressBar slow("slow", 2, On());
  clock_.AdvanceSeconds(1);
  slow.Advance(1);
  clock_.AdvanceSeconds(1);
  slow.Advance(1);  // rate limit passed: drawn at 2/2
  slow.Finish();
  slow.Finish();    // once
  const std::string text = out_.text();
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1);
  EXPECT_NE(text.rfind("2/2  in 2s"), std::string::npos) << text;
  slow.Advance(1);  // after Finish: nothing
  EXPECT_EQ(out_.text(), text);
}

TEST_F(ProgressBarTest, LogPrintsAboveTheBarAndRedrawsIt) {
  ProgressBar bar("work", 10, On());
  clock_.AdvanceSeconds(1);
  bar.Advance(1);
  const size_t before = out_.text().size();
  bar.Log("FAILED cell");
  const std::string after = out_.text().substr(before);
  EXPECT_EQ(after.rfind("\r\033[KFAILED cell\n\rwork [", 0), 0u) << after;
  EXPECT_NE(after.find("1/10"), std::string::npos);
}

TEST_F(ProgressBarTest, LogWithoutABarIsAPlainLine) {
  ProgressBar off("work", 10, {.enabled = false, .out = out_.file(), .env = &clock_});
  off.Log("a line");
  EXPECT_EQ(out_.text(), "a line\n");
}

TEST_F(ProgressBarTest, LongLinesAreCutToTheWidth) {
  ProgressBar bar("work", 10, {.enabled = true, .out = out_.file(), .env = &clock_, .width = 40});
  clock_.AdvanceSeconds(1);
  bar.Advance(1, std::string(200, 'x'));
  const std::string text = out_.text();
  ASSERT_GE(text.size(), 4u);
  EXPECT_EQ(text.size(), 1 + 39 + 3) << "\\r, 39 columns, ESC [ K";
}

TEST_F(ProgressBarTest, CallbackSetsTotalAndDone) {
  ProgressBar bar("work", 0, On());
  ProgressFn f = bar.Callback();
  f(5, 50);
  EXPECT_EQ(bar.done(), 5u);
  EXPECT_EQ(bar.total(), 50u);
  f(60, 50);  // done past total grows the total
  EXPECT_EQ(bar.total(), 60u);
  bar.AddTotal(4);
  EXPECT_EQ(bar.total(), 64u);
}

TEST(ProgressFormat, Durations) {
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(192), "3m12s");
  EXPECT_EQ(FormatDuration(3840), "1h04m");
  EXPECT_EQ(FormatDuration(-1), "?");
}

TEST(ProgressTerminal, APipeIsNotATerminalAPtyIs) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* pipe_end = ::fdopen(fds[1], "w");
  EXPECT_FALSE(IsInteractiveTerminal(pipe_end));
  std::fclose(pipe_end);
  ::close(fds[0]);

  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  std::FILE* tty = ::fdopen(slave, "w");
  const char* term = std::getenv("TERM");
  const std::string saved = term != nullptr ? term : "";
  ::setenv("TERM", "xterm", 1);
  EXPECT_TRUE(IsInteractiveTerminal(tty));
  ::setenv("TERM", "dumb", 1);
  EXPECT_FALSE(IsInteractiveTerminal(tty)) << "a dumb terminal cannot erase a line";
  if (term != nullptr) ::setenv("TERM", saved.c_str(), 1);
  else ::unsetenv("TERM");
  std::fclose(tty);
  ::close(master);
}

}  // namespace
}  // namespace ember
