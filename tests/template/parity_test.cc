// Byte-for-byte parity with @huggingface/jinja on real chat templates (Llama 3, Llama 3.1, Llama 3.2 with
// tools, Qwen3, Gemma 3, Mistral Nemo) over every message list in cases/chat_cases.json. The expected
// renderings are produced at test time by render_reference.mjs; if node or the package is missing the
// test fails (it never skips). A case where the reference raises must raise in ember too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "reference_util.h"
#include "support/sim_env.h"
#include "template/chat_template.h"

namespace ember {
namespace {

using jinja::testing::ReadFile;
using jinja::testing::RunReference;
const std::string& kDir = jinja::testing::TemplateTestDir();

// A clock at the instant render_reference.mjs pins Date to: 2024-07-26T10:30:00Z.
::ember::Env* FixedTime() {
  static ::ember::testing::SimEnv env;
  env.SetWallMicros(int64_t{1721989800} * 1'000'000);
  return &env;
}

TEST(ChatTemplateParity, MatchesHuggingFaceJinja) {
  int status = 0;
  const std::string raw = RunReference(kDir + "/templates " + kDir + "/cases/chat_cases.json", &status);
  ASSERT_EQ(status, 0) << "reference renderer failed (is node installed and peers/llamacpp npm-installed?):\n"
                       << raw.substr(0, 2000);
  const auto results = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(results.is_array()) << raw.substr(0, 2000);
  const auto cases = nlohmann::ordered_json::parse(ReadFile(kDir + "/cases/chat_cases.json"));
  const auto tokens = nlohmann::ordered_json::parse(ReadFile(kDir + "/templates/tokens.json"));
  ASSERT_GE(cases.size(), 50u);
  ASSERT_EQ(results.size(), cases.size() * tokens.size());  // every template x every case

  std::map<std::string, nlohmann::ordered_json> contexts;
  for (const auto& c : cases) contexts[c["name"].get<std::string>()] = c["context"];
  ChatTemplateOptions opts;
  opts.env = FixedTime();
  int rendered = 0, raised = 0;
  for (const auto& r : results) {
    const std::string name = r["template"].get<std::string>();
    const std::string case_name = r["case"].get<std::string>();
    SCOPED_TRACE(name + " / " + case_name);
    const std::string tmpl = ReadFile(kDir + "/templates/" + name + ".jinja");
    nlohmann::ordered_json context = contexts.at(case_name);
    for (const auto& [k, v] : tokens[name].items()) context[k] = v;
    const auto got = RenderChatTemplate(tmpl, context, opts);
    if (r["ok"].get<bool>()) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, r["output"].get<std::string>());
      ++rendered;
    } else {
      EXPECT_FALSE(got.ok()) << "reference raised \"" << r["error"].get<std::string>() << "\" but ember rendered:\n"
                             << (got.ok() ? *got : "");
      ++raised;
    }
  }
  // Both outcomes must be exercised for the comparison to mean anything.
  EXPECT_GT(rendered, 200);
  EXPECT_GT(raised, 10);
}

}  // namespace
}  // namespace ember
