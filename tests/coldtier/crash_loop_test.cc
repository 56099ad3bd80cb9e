// A real kill -9 loop (spec §7): a forked child writes entries through PosixEnv until it is SIGKILLed at
// a random instant; the parent then opens the directory like a restarting server and checks that no
// corrupt entry exists or is served and that the index matches the files (coldtier/crash_writer.h).
// 200 rounds here; scripts/cache-crash-loop runs 1,000 against `ember cache _crash-writer`.
#include "coldtier/crash_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

namespace ember {
namespace {

TEST(CrashLoopTest, KillNineAtRandomInstantsNeverLeavesACorruptEntry) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("ember_crash_loop_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  constexpr uint64_t kCap = 2ull << 20;
  constexpr int kRounds = 200;
  std::mt19937 rng(12345);
  uint64_t temps = 0, max_entries = 0;
  for (int round = 0; round < kRounds; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Status st = RunCrashWriter(dir, 1000 + round, kCap);
      std::fprintf(stderr, "crash writer: %s\n", st.ToString().c_str());
      ::_exit(3);
    }
    // Mostly short lives (kills land during the first writes and the scan); every 10th lives longer so
    // the directory fills up to the cap and evictions run too.
    const int ms = round % 10 == 9 ? 100 : static_cast<int>(rng() % 20) + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "the writer exited by itself, round " << round;
    StatusOr<CrashCheck> check = VerifyCrashDir(*PosixEnv::Default(), dir, kCap);
    ASSERT_TRUE(check.ok()) << "round " << round << ": " << check.status().ToString();
    temps += check->temp_deleted;
    max_entries = std::max<uint64_t>(max_entries, check->entries);
  }
  std::printf("crash loop: %d kills, %llu half-written temp files removed, up to %llu entries\n", kRounds,
              static_cast<unsigned long long>(temps), static_cast<unsigned long long>(max_entries));
  EXPECT_GT(max_entries, 0u);  // the writer made progress (the 100 ms rounds)
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember
