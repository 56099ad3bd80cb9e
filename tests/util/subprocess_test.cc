#include "util/subprocess.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember {
namespace {

namespace fs = std::filesystem;

class SubprocessTest : public ::testing::Test {
 protected:
  testing::TempDir tmp_;  // removed with the fixture
  std::string dir_ = tmp_.path().string();
};

TEST_F(SubprocessTest, CapturesStdoutAndStderrAndTheExitCode) {
  auto r = RunProcess({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 30);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->signal, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->ok());
  Status st = r->ToStatus("the script");
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("the script exited 3: err"), std::string::npos) << st.message();
  EXPECT_GT(r->peak_rss_bytes, 0);
}

TEST_F(SubprocessTest, EchoFromPath) {
  auto r = RunProcess({"echo", "hello", "world"}, 30);  // no '/': looked up in PATH
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "hello world\n");
  EXPECT_TRUE(r->ok());
  EXPECT_TRUE(r->ToStatus("echo").ok());
}

// The reason for one runner: a user's path is one argument, whatever it contains. popen("node '" + path
// + "' ...") broke on the quote and ran the `$(...)` and the `; ...` in a shell.
TEST_F(SubprocessTest, HostileArgumentReachesTheChildAsOneArgument) {
  const std::string marker = dir_ + "/pwned";
  const std::string hostile = dir_ + "/it's a \"model\" $(touch " + marker + "); touch " + marker + " `id` \\ *.gguf";
  auto r = RunProcess({"/bin/sh", "-c", "printf '%s\\n' \"$#\" \"$1\"", "sh", hostile}, 30);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "1\n" + hostile + "\n");
  EXPECT_FALSE(fs::exists(marker)) << "an argument was run by a shell";
}

TEST_F(SubprocessTest, MissingProgramIsAnErrorNamingIt) {
  auto r = RunProcess({dir_ + "/no-such-program", "x"}, 30);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no-such-program"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(RunProcess(std::vector<std::string>{}, 30).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SubprocessTest, StdinEnvironmentAndWorkingDirectory) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "cat; echo \"[$EMBER_TEST_VAR]\"; pwd"};
  o.stdin_data = std::string("line one\nline two\n");
  o.env = {{"EMBER_TEST_VAR", "a b;c"}};
  o.working_dir = dir_;
  auto r = RunProcess(o, 30);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "line one\nline two\n[a b;c]\n" + fs::canonical(dir_).string() + "\n");
  EXPECT_EQ(r->exit_code, 0);
}

TEST_F(SubprocessTest, EnvironmentAdditionReplacesAnInheritedVariable) {
  ASSERT_EQ(::setenv("EMBER_SUBPROCESS_INHERITED", "parent", 1), 0);
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"$EMBER_SUBPROCESS_INHERITED\"; env | grep -c '^EMBER_SUBPROCESS_INHERITED='"};
  auto inherited = RunProcess(o, 30);
  o.env = {{"EMBER_SUBPROCESS_INHERITED", "child"}};
  auto replaced = RunProcess(o, 30);
  ::unsetenv("EMBER_SUBPROCESS_INHERITED");
  ASSERT_TRUE(inherited.ok() && replaced.ok());
  EXPECT_EQ(inherited->out, "parent\n1\n");
  EXPECT_EQ(replaced->out, "child\n1\n");  // replaced, not defined twice
}

// A stdin larger than a pipe buffer while the child also writes more than one: neither side blocks.
TEST_F(SubprocessTest, LargeStdinAndStdoutDoNotDeadlock) {
  ProcessOptions o;
  o.argv = {"/bin/cat"};
  o.stdin_data = std::string(4 << 20, 'x');
  auto r = RunProcess(o, 60);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out.size(), size_t{4} << 20);
  EXPECT_EQ(r->exit_code, 0);
}

// A child that exits without reading its stdin: the unsent bytes are dropped, this process survives
// (no SIGPIPE), and the exit code is reported.
TEST_F(SubprocessTest, ChildThatIgnoresStdin) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "exec 0<&-; exit 5"};
  o.stdin_data = std::string(8 << 20, 'y');
  auto r = RunProcess(o, 60);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 5);
}

TEST_F(SubprocessTest, OutputToFilesAndMergedStderr) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "echo one; echo two >&2; echo three"};
  o.stdout_mode = OutputMode::kFile;
  o.stdout_path = dir_ + "/log with space.txt";
  o.stderr_mode = OutputMode::kSameAsStdout;
  auto r = RunProcess(o, 30);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->out.empty());
  EXPECT_TRUE(r->err.empty());
  EXPECT_EQ(testing::ReadFileToString(o.stdout_path), "one\ntwo\nthree\n");
  EXPECT_EQ(fs::status(o.stdout_path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);

  o.stdout_mode = OutputMode::kDiscard;
  o.stderr_mode = OutputMode::kFile;
  o.stderr_path = dir_ + "/err.txt";
  r = RunProcess(o, 30);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->out.empty());
  EXPECT_EQ(testing::ReadFileToString(o.stderr_path), "two\n");

  o.stderr_path = dir_ + "/no/such/dir/err.txt";
  EXPECT_FALSE(RunProcess(o, 30).ok());
}

// The time limit kills the whole process group: the child and the sleep it started.
TEST_F(SubprocessTest, TimeoutKillsTheProcessGroup) {
  const std::string pidfile = dir_ + "/grandchild.pid";
  auto r = RunProcess({"/bin/sh", "-c", "sleep 30 & echo $! > '" + pidfile + "'; wait"}, 0.5);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_LT(r->wall_s, 20);  // not the 30 s of the sleep
  EXPECT_EQ(r->ToStatus("sleeper").code(), StatusCode::kResourceExhausted);
  const pid_t grandchild = std::atoi(testing::ReadFileToString(pidfile).c_str());
  ASSERT_GT(grandchild, 0);
  // The grandchild got SIGKILL too; it is a zombie of init at most, never still sleeping.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    const std::string stat = testing::ReadFileToString("/proc/" + std::to_string(grandchild) + "/stat");
    gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "the grandchild sleep survived the timeout";
}

TEST_F(SubprocessTest, SignalledChildReportsTheSignal) {
  auto r = RunProcess({"/bin/sh", "-c", "kill -TERM $$"}, 30);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_FALSE(r->timed_out);
  EXPECT_NE(r->ToStatus("x").message().find("signal 15"), std::string::npos);
}

// A long-running child (how the benchmarks drive `ember serve`): started, polled, terminated.
TEST_F(SubprocessTest, StartPollSignalWait) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "trap 'echo draining; exit 7' TERM; echo ready; while :; do sleep 0.05; done"};
  o.stdout_mode = OutputMode::kFile;
  o.stdout_path = dir_ + "/serve.log";
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GT((*p)->pid(), 0);
  for (int i = 0; i < 500 && testing::ReadFileToString(o.stdout_path).find("ready") == std::string::npos; ++i) ::usleep(10000);
  ASSERT_EQ(testing::ReadFileToString(o.stdout_path), "ready\n");
  EXPECT_FALSE((*p)->HasExited());
  (*p)->Signal(SIGTERM);
  ProcessResult r = (*p)->Wait(20);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_TRUE((*p)->HasExited());
  EXPECT_EQ(testing::ReadFileToString(o.stdout_path), "ready\ndraining\n");
}

// Dropping a running Process kills its group and reaps it (no orphan outlives a failed benchmark).
TEST_F(SubprocessTest, DestructorKillsARunningChild) {
  ProcessOptions o;
  o.argv = {"sleep", "30"};
  o.stdout_mode = o.stderr_mode = OutputMode::kDiscard;
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  const pid_t pid = (*p)->pid();
  p->reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: the pid is gone
}

}  // namespace
}  // namespace ember
