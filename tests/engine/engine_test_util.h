// Helpers shared by the engine tests: run a command, make a tiny model with `ember gen-model`.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace ember::testutil {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
};

inline CommandResult RunCommand(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Directories MakeTempDir made, removed when the test process exits: generated models are megabytes
// each, and a suite run many times a day must not fill /tmp.
inline std::vector<std::string>& TempDirsToRemove() {
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>();
    std::atexit([] {
      std::error_code ec;
      for (const std::string& d : TempDirsToRemove()) std::filesystem::remove_all(d, ec);
    });
    return v;
  }();
  return *dirs;
}

// A fresh directory under the test temp dir, removed at process exit.
inline std::string MakeTempDir(const std::string& tag) {
  std::string tmpl = ::testing::TempDir() + "ember-" + tag + "-XXXXXX";
  char* d = mkdtemp(tmpl.data());
  EXPECT_NE(d, nullptr);
  if (d == nullptr) return std::string("/tmp");
  TempDirsToRemove().emplace_back(d);
  return std::string(d);
}

inline std::string EmberBinary() { return std::string(EMBER_BINARY_DIR) + "/ember"; }
inline std::string PeerRunner() { return std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs"; }

// Runs `ember gen-model --out path <args>`; fails the test on error.
inline std::string GenModel(const std::string& dir, const std::string& name, const std::string& args) {
  const std::string path = dir + "/" + name + ".gguf";
  const CommandResult r = RunCommand(EmberBinary() + " gen-model --out " + path + " " + args + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return path;
}

}  // namespace ember::testutil
