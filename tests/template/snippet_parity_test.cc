// One small template per construct (cases/snippets.json, written by cases/make_snippets.py), each rendered
// by ember and by @huggingface/jinja: outputs must match byte for byte, and where the reference raises
// ember must raise too. Fails (never skips) when node or the package is missing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "reference_util.h"
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

TEST(SnippetParity, EveryConstructMatchesHuggingFaceJinja) {
  const std::string path = TemplateTestDir() + "/cases/snippets.json";
  int status = 0;
  const std::string raw = RunReference("--snippets " + path, &status);
  ASSERT_EQ(status, 0) << "reference renderer failed (is node installed and peers/llamacpp npm-installed?):\n"
                       << raw.substr(0, 2000);
  const auto results = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(results.is_array()) << raw.substr(0, 2000);
  const auto snippets = nlohmann::ordered_json::parse(ReadFile(path));
  ASSERT_EQ(results.size(), snippets.size());
  ASSERT_GE(snippets.size(), 80u);
  int raised = 0;
  for (size_t i = 0; i < snippets.size(); ++i) {
    const auto& s = snippets[i];
    const auto& r = results[i];
    SCOPED_TRACE(s["name"].get<std::string>() + ": " + s["template"].get<std::string>());
    const auto got = Render(s["template"].get<std::string>(), s["context"]);
    if (r["ok"].get<bool>()) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, r["output"].get<std::string>());
    } else {
      ++raised;
      EXPECT_FALSE(got.ok()) << "reference raised \"" << r["error"].get<std::string>() << "\" but ember rendered:\n"
                             << (got.ok() ? *got : "");
    }
  }
  EXPECT_GE(raised, 10);
}

}  // namespace
}  // namespace ember::jinja::testing
