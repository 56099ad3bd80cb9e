// `ember models` as a user runs it (the binary, a clean environment with a temporary HOME): the JSON
// and the table list what the stores hold, and a machine with no models still exits 0 saying where it
// looked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "library_test_util.h"

namespace ember::library {
namespace {

using ::ember::testing::EmberBinary;
using ::ember::testing::RunCommand;
using ::ember::testing::ShellQuote;
using ::ember::testing::TempDir;
using testing::PlaceModel;

// `ember models ARGS` with only HOME and XDG_DATA_HOME set (stdout and stderr together).
::ember::testing::CommandResult Models(const TempDir& t, const std::string& args) {
  return RunCommand("env -i HOME=" + ShellQuote(t.file("home")) + " XDG_DATA_HOME=" + ShellQuote(t.file("xdg-data")) +
                    " " + ShellQuote(EmberBinary()) + " models " + args + " 2>&1");
}

TEST(ModelsCli, JsonListsModelsLocationsAndWarnings) {
  TempDir t;
  PlaceModel(t.file("home/.cache/llama.cpp/org_repo_tiny-Q8_0.gguf"));
  PlaceModel(t.file("xdg-data/ember/demo.gguf"));
  PlaceModel(t.file("mine/mine.gguf"));
  const auto r = Models(t, "--json --models-dir " + ShellQuote(t.file("mine")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& m : j["models"]) by_name[m["name"].get<std::string>()] = m;
  ASSERT_TRUE(by_name.count("mine") && by_name.count("demo") && by_name.count("org_repo_tiny-Q8_0")) << r.out;
  const nlohmann::json& m = by_name["mine"];
  EXPECT_EQ(m["source"], "models-dir");
  EXPECT_EQ(m["path"], t.file("mine/mine.gguf"));
  EXPECT_EQ(m["format"], "gguf");
  EXPECT_EQ(m["arch"], "llama");
  EXPECT_EQ(m["quant"], "Q8_0");
  EXPECT_EQ(m["context_length"], 2048);
  EXPECT_EQ(m["runnable"], true);
  EXPECT_EQ(m["why_not"], "");
  EXPECT_GT(m["parameters"].get<uint64_t>(), 0u);
  EXPECT_GT(m["size_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(by_name["demo"]["source"], "ember");
  EXPECT_EQ(by_name["org_repo_tiny-Q8_0"]["source"], "llama.cpp");
  ASSERT_TRUE(j["locations"].is_array());
  ASSERT_GE(j["locations"].size(), 3u);
  EXPECT_EQ(j["locations"][0]["origin"], "--models-dir");
  EXPECT_EQ(j["locations"][0]["models"], 1);
  EXPECT_EQ(j["locations"][1]["path"], t.file("xdg-data/ember"));
  EXPECT_EQ(j["locations"][2]["path"], t.file("home/.cache/llama.cpp"));
  EXPECT_TRUE(j["warnings"].is_array());
}

TEST(ModelsCli, TableWithPaths) {
  TempDir t;
  PlaceModel(t.file("xdg-data/ember/demo.gguf"));
  const auto r = Models(t, "--no-stores --path");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("NAME ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("RUNNABLE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" llama "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" yes "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t.file("xdg-data/ember/demo.gguf")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 model, 1 runnable by ember."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Looked in:\n  ember      " + t.file("xdg-data/ember") + " (data dir): 1 model"),
            std::string::npos)
      << r.out;
}

TEST(ModelsCli, NothingFoundStillExitsZeroAndSaysWhereItLooked) {
  TempDir t;
  const auto r = Models(t, "");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("No models found."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t.file("home/.ollama/models") + " (default): not there"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t.file("home/.cache/huggingface/hub") + " (default): not there"), std::string::npos) << r.out;
}

TEST(ModelsCli, HelpExplainsWhereItLooks) {
  TempDir t;
  const auto r = Models(t, "--help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* needle : {"--models-dir", "--no-stores", "--json", "--path", "LLAMA_CACHE", "OLLAMA_MODELS",
                             "HF_HUB_CACHE", "HF_HOME", "XDG_DATA_HOME", ".lmstudio", "/usr/share/ollama"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
}

}  // namespace
}  // namespace ember::library
