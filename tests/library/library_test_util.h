// What the library tests share: a real tiny model made by the generator (once per test binary), fake
// stores built from it under a temporary home, and hermetic scan options (no process environment, no
// system folders).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "genmodel/gen_model.h"
#include "library/model_catalog.h"
#include "support/test_support.h"

namespace ember::library::testing {

namespace fs = std::filesystem;

// A well-formed sha256 digest for Ollama blob and manifest fixtures.
inline constexpr const char* kDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// A 1-layer llama model with the Llama 3 tokenizer, all Q8_0 (about 9 MB), generated on first use.
inline const std::string& TinyModel() {
  static ::ember::testing::TempDir* dir = new ::ember::testing::TempDir();  // lives until exit
  static const std::string path = [] {
    GenModelOptions o;
    o.arch = "llama";
    o.tokenizer = "llama3";
    o.n_layer = 1;
    o.n_embd = 64;
    o.n_head = 2;
    o.n_head_kv = 2;
    o.n_ff = 128;
    o.n_ctx = 2048;
    o.type = o.type_embd = o.type_output = GgmlType::Q8_0;
    o.type_embd_set = o.type_output_set = true;
    GenModelReport report;
    const std::string p = dir->file("tiny.gguf");
    const Status st = GenerateModel(o, p, &report);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return p;
  }();
  return path;
}

// Creates the parent folders of `path`.
inline void MakeParents(const std::string& path) { fs::create_directories(fs::path(path).parent_path()); }

// A hard link to the tiny model at `path` (the stores' files cost no space or time).
inline void PlaceModel(const std::string& path) {
  MakeParents(path);
  fs::create_hard_link(TinyModel(), path);
}

inline void WriteText(const std::string& path, const std::string& text) {
  MakeParents(path);
  std::ofstream(path, std::ios::binary) << text;
}

// Only the folders the test names: no process environment, no /usr/share/ollama.
inline ScanOptions Hermetic(const std::string& home) {
  ScanOptions o;
  o.home = home;
  o.env_vars = std::map<std::string, std::string>{};
  o.ollama_system_dirs = {};
  return o;
}

inline const ModelRecord* Find(const std::vector<ModelRecord>& models, const std::string& name) {
  for (const ModelRecord& r : models) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// Names in the scan's (sorted) order, for failure messages.
inline std::string Names(const std::vector<ModelRecord>& models) {
  std::string s;
  for (const ModelRecord& r : models) s += r.name + " [" + r.path + "]\n";
  return s;
}

}  // namespace ember::library::testing
