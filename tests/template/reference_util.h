// Runs the reference renderer (render_reference.mjs, @huggingface/jinja under node) for parity tests.
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace ember::jinja::testing {

inline const std::string& TemplateTestDir() {
  static const std::string dir = std::string(EMBER_SOURCE_DIR) + "/tests/template";
  return dir;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `node render_reference.mjs <args>`: returns stdout+stderr; *status is the exit status (0 = success).
inline std::string RunReference(const std::string& args, int* status) {
  const std::string cmd = "node " + TemplateTestDir() + "/render_reference.mjs " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return "";
  }
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  *status = pclose(pipe);
  return out;
}

}  // namespace ember::jinja::testing
