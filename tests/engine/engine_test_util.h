// Helpers shared by the engine tests: run a command, make a tiny model with `ember gen-model`.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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

// "1,2,3": token ids for the peer's --tokens / --rows.
inline std::string JoinIds(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// KL(p ‖ softmax(logits)) with p a probability row (renormalised: the peer's f32 row sums to 1 only
// to ~1e-6, which would otherwise show up as a bias of that size).
inline double KlFromProbs(const float* p, const float* logits, int64_t n) {
  double psum = 0;
  for (int64_t i = 0; i < n; ++i) psum += p[i];
  double mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double z = 0;
  for (int64_t i = 0; i < n; ++i) z += std::exp(logits[i] - mx);
  const double log_z = std::log(z) + mx;
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double pi = p[i] / psum;
    if (pi > 0) kl += pi * (std::log(pi) - (logits[i] - log_z));
  }
  return kl;
}

}  // namespace ember::testutil
