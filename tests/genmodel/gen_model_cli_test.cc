// `ember gen-model`'s output channels: with stderr off a terminal (a file, a pipe: CI, scripts) it draws no
// progress at all and --json prints exactly one JSON object; with stderr on a terminal (a pty) it draws a
// bar there, and still none with --json.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

extern char** environ;

namespace ember {
namespace {

using testing::EmberBinary;
using testing::ReadFileToString;
using testing::RunCommand;
using testing::ShellQuote;
using testing::TempDir;

// Big enough that writing it takes well over the bar's 0.3 s show delay on any machine (a 65M-parameter
// token table to make and quantize), small enough for a test.
const std::vector<std::string> kModelArgs = {"--n-layer", "2", "--n-embd", "512", "--n-head", "8", "--n-head-kv", "4",
                                             "--n-ff", "1024", "--type", "q8_0"};

std::string Flags(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) {
    s += ' ';
    s += ShellQuote(a);
  }
  return s;
}

struct TerminalRun {
  int exit_code = -1;
  std::string terminal;  // everything written to stderr (a pty)
  std::string out;       // stdout (a file)
};

// Runs ember with stderr on a new pseudo-terminal (TERM=xterm) and stdout to a file.
TerminalRun RunOnTerminal(const std::vector<std::string>& args, const std::string& out_path) {
  TerminalRun r;
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) {
    ADD_FAILURE() << "openpty: " << errno;
    return r;
  }
  std::vector<std::string> argv_s = {EmberBinary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"TERM=xterm"};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("TERM=", 0) != 0) env_s.push_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, slave, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addclose(&fa, master);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(slave);  // the child holds the only copy: its exit ends the reads below with EIO
  if (rc != 0) {
    ::close(master);
    ADD_FAILURE() << "posix_spawn: " << rc;
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) r.terminal.append(buf, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFileToString(out_path);
  return r;
}

TEST(GenModelCli, NoProgressWhenStderrIsNotATerminal) {
  TempDir dir;
  const std::string cmd = EmberBinary() + " gen-model --out " + ShellQuote(dir.file("m.gguf")) + Flags(kModelArgs) +
                          " 2> " + ShellQuote(dir.file("err"));
  const auto r = RunCommand(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("wrote ", 0), 0u) << r.out;
  EXPECT_EQ(ReadFileToString(dir.file("err")), "") << "stderr to a file carries no bar";
}

TEST(GenModelCli, JsonIsOneObjectAndNothingElse) {
  TempDir dir;
  const auto r = RunCommand(EmberBinary() + " gen-model --json --out " + ShellQuote(dir.file("m.gguf")) +
                            Flags(kModelArgs) + " 2> " + ShellQuote(dir.file("err")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.value("out", ""), dir.file("m.gguf"));
  EXPECT_GT(j.value("n_params", 0ull), 60'000'000ull);
  EXPECT_EQ(ReadFileToString(dir.file("err")), "");
}

TEST(GenModelCli, DrawsABarOnATerminal) {
  TempDir dir;
  std::vector<std::string> args = {"gen-model", "--out", dir.file("m.gguf")};
  args.insert(args.end(), kModelArgs.begin(), kModelArgs.end());
  const TerminalRun r = RunOnTerminal(args, dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.terminal;
  EXPECT_EQ(r.out.rfind("wrote ", 0), 0u) << "the summary stays on stdout: " << r.out;
  EXPECT_NE(r.terminal.find("\rgen-model ["), std::string::npos) << r.terminal;
  EXPECT_NE(r.terminal.find("\033[K"), std::string::npos) << "each redraw erases the rest of the line";
  // The last draw is the finished bar, then the line ends (the pty turns "\n" into "\r\n").
  const size_t last = r.terminal.rfind("\rgen-model [");
  ASSERT_NE(last, std::string::npos);
  const std::string final_line = r.terminal.substr(last);
  EXPECT_NE(final_line.find("[########################] 100%"), std::string::npos) << final_line;
  EXPECT_NE(final_line.find(" in "), std::string::npos) << final_line;
  EXPECT_EQ(final_line.substr(final_line.size() - 2), "\r\n") << final_line;
}

TEST(GenModelCli, NoBarWithJsonEvenOnATerminal) {
  TempDir dir;
  std::vector<std::string> args = {"gen-model", "--json", "--out", dir.file("m.gguf")};
  args.insert(args.end(), kModelArgs.begin(), kModelArgs.end());
  const TerminalRun r = RunOnTerminal(args, dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.terminal;
  EXPECT_EQ(r.terminal, "");
  EXPECT_TRUE(nlohmann::json::parse(r.out, nullptr, false).is_object()) << r.out;
}

}  // namespace
}  // namespace ember
