// The time rule (docs/conventions.md "Time"): product code reads clocks and sleeps only through an Env
// (util/env.h), so a simulated clock (tests/support/sim_env.h) reaches every timer, deadline and
// measurement. This scans src/ for direct clock readings and sleeps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ember {
namespace {

// Files allowed to touch the real clock, each for a reason.
const std::set<std::string>& Exceptions() {
  static const std::set<std::string> files = {
      "util/env.cc",            // PosixEnv: the one real clock, sleep and timed wait
  };
  return files;
}

TEST(TimePolicy, NoDirectClockReadingsOrSleepsInSources) {
  // steady_clock::now(), system_clock::now(), an alias's Clock::now(), time(nullptr), the C clocks, and
  // sleeping the thread directly.
  const std::regex direct(
      R"(([A-Za-z_]*[Cc]lock::now\s*\()|(\btime\s*\(\s*(nullptr|NULL|0)\s*\))|(\bgettimeofday\s*\()|)"
      R"((\bclock_gettime\s*\()|(\bsleep_for\s*\()|(\bsleep_until\s*\())");
  const std::string root = std::string(EMBER_SOURCE_DIR) + "/src/";
  std::vector<std::string> offenders;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".inc")) continue;
    const std::string rel = entry.path().string().substr(root.size());
    if (Exceptions().count(rel)) continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const size_t comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      if (std::regex_search(code, direct)) offenders.push_back(rel + ":" + std::to_string(n) + ": " + line);
    }
  }
  std::ostringstream list;
  for (const auto& o : offenders) list << "\n  " << o;
  EXPECT_TRUE(offenders.empty()) << "direct clock use in src/ (use Env::MonotonicMicros/WallMicros, util/stopwatch.h, "
                                    "Env::SleepForMicros or Env::WaitUntil):"
                                 << list.str();
}

// The pattern itself catches what it is meant to (a broken regex would pass vacuously).
TEST(TimePolicy, ThePatternMatchesEveryForbiddenForm) {
  const std::regex direct(
      R"(([A-Za-z_]*[Cc]lock::now\s*\()|(\btime\s*\(\s*(nullptr|NULL|0)\s*\))|(\bgettimeofday\s*\()|)"
      R"((\bclock_gettime\s*\()|(\bsleep_for\s*\()|(\bsleep_until\s*\())");
  for (const char* bad : {"auto t = std::chrono::steady_clock::now();", "system_clock::now ()", "Clock::now()",
                          "SteadyClock::now()", "std::time(nullptr)", "::time(NULL)", "gettimeofday(&tv, nullptr)",
                          "clock_gettime(CLOCK_MONOTONIC, &ts)", "std::this_thread::sleep_for(ms)",
                          "std::this_thread::sleep_until(t)"}) {
    EXPECT_TRUE(std::regex_search(std::string(bad), direct)) << bad;
  }
  for (const char* ok : {"env->MonotonicMicros()", "Stopwatch t0;", "env_->WaitUntil(&cv, &mu, d)",
                         "runtime(nullptr)", "std::chrono::steady_clock::time_point"}) {
    EXPECT_FALSE(std::regex_search(std::string(ok), direct)) << ok;
  }
}

}  // namespace
}  // namespace ember
