// Helpers shared by tests: temporary directories, running a command, locating the repo, the build and
// the llama.cpp peer runner.
#pragma once

#include <filesystem>
#include <string>

namespace ember::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout (stderr is left on the test's stderr)
};

// Runs `command` through /bin/sh and captures stdout.
CommandResult RunCommand(const std::string& command);

// A fresh directory under the system temp dir, removed (recursively) when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string SourceDir();   // repo root
std::string BinaryDir();   // build dir (holds the `ember` binary)
std::string EmberBinary(); // <build>/ember
// "node <repo>/peers/llamacpp/runner.mjs"
std::string PeerRunner();
// The whole file as bytes (empty if it cannot be read: the test's own assertions then fail).
std::string ReadFileToString(const std::string& path);
// Single-quotes a string for /bin/sh.
std::string ShellQuote(const std::string& s);

}  // namespace ember::testing
