// A real kill -9 loop (spec §7): a forked child writes entries through the real Env until it is SIGKILLed
// at a random instant; the parent then opens the directory like a restarting server and checks that no
// corrupt entry exists or is served and that the index matches the files (crash_writer.h).
// 200 rounds here; scripts/cache-crash-loop runs 1,000 against the test tool `ember_crash_writer`, whose
// write / check commands the second test runs the same way the script does.
#include "crash_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "support/test_support.h"

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
    StatusOr<CrashCheck> check = VerifyCrashDir(*Env::Default(), dir, kCap);
    ASSERT_TRUE(check.ok()) << "round " << round << ": " << check.status().ToString();
    temps += check->temp_deleted;
    max_entries = std::max<uint64_t>(max_entries, check->entries);
  }
  std::printf("crash loop: %d kills, %llu half-written temp files removed, up to %llu entries\n", kRounds,
              static_cast<unsigned long long>(temps), static_cast<unsigned long long>(max_entries));
  EXPECT_GT(max_entries, 0u);  // the writer made progress (the 100 ms rounds)
  std::filesystem::remove_all(dir);
}

// What scripts/cache-crash-loop does, a few rounds: `ember_crash_writer write` killed by SIGKILL, then
// `ember_crash_writer check` on the directory (exit 0 and its "ok entries=" line, which the script parses).
TEST(CrashLoopTest, TheCrashWriterToolSurvivesKillNineAndItsCheckPasses) {
  testing::TempDir dir;
  const std::string tool = testing::BinaryDir() + "/ember_crash_writer";
  ASSERT_TRUE(std::filesystem::exists(tool)) << tool << " is not built";
  const std::string d = testing::ShellQuote(dir.path().string());
  uint64_t max_entries = 0;
  for (int round = 0; round < 5; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string seed = std::to_string(round + 1), path = dir.path().string();
      ::execl(tool.c_str(), tool.c_str(), "write", path.c_str(), "--seed", seed.c_str(), "--cap", "2M",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(round == 4 ? 300 : 30));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "the tool exited by itself, round " << round;
    const testing::CommandResult check = testing::RunCommand(testing::ShellQuote(tool) + " check " + d + " --cap 2M");
    ASSERT_EQ(check.exit_code, 0) << check.out;
    ASSERT_EQ(check.out.rfind("ok entries=", 0), 0u) << check.out;
    max_entries = std::max<uint64_t>(max_entries, std::stoull(check.out.substr(11)));
  }
  EXPECT_GT(max_entries, 0u);  // the tool wrote entries (the 300 ms round)
  // The checker fails on what a crash cannot explain: an entry file whose header is garbage.
  std::string victim;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (e.path().extension() == ".entry") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::FILE* f = std::fopen(victim.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("not an entry", f);
  std::fclose(f);
  const testing::CommandResult bad = testing::RunCommand(testing::ShellQuote(tool) + " check " + d + " --cap 2M");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out.rfind("FAIL ", 0), 0u) << bad.out;
  EXPECT_NE(bad.out.find("corrupt"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace ember
