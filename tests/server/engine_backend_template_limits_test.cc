// A chat-template render limit (template/limits.h) hit by what a request holds is the client's error: the
// real backend answers InvalidArgument (a 400) naming the limit, not ResourceExhausted (a 429), and the
// next request renders normally.
#include <gtest/gtest.h>

#include "server/engine_backend.h"
#include "support/test_support.h"

namespace ember::server {
namespace {

TEST(EngineBackendTemplateLimits, LimitsAreInvalidRequests) {
  testing::TempDir dir;
  const std::string cmd = testing::EmberBinary() + " gen-model --out " + dir.file("m.gguf") +
                          " --n-layer 1 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32 --seed 7";
  ASSERT_EQ(testing::RunCommand(cmd + " > /dev/null").exit_code, 0);
  ServeOptions o;
  o.model_path = dir.file("m.gguf");
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();

  // JSON text nested past kMaxJsonDepth (json_input.h) reaches the template as the string it is: never
  // converted recursively, never a crash (the request parsers already answer such arguments with a 400).
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  ChatTemplateInput deep;
  deep.messages = {{"user", "hi", {}, "", ""}};
  deep.kwargs_json = {{"extra", deep_json}};
  EXPECT_TRUE((*backend)->ApplyChatTemplate(deep).ok());

  ChatTemplateInput big;
  big.messages = {{"user", std::string(40u << 20, 'x'), {}, "", ""}};
  const auto s = (*backend)->ApplyChatTemplate(big);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find("max_string_bytes exceeded"), std::string::npos);

  // Tool-call arguments and tool parameters arrive as JSON text, parsed again for the template: a deep
  // document there stays text the same way.
  ChatTemplateInput args;
  args.messages = {{"user", "hi", {}, "", ""}, {"assistant", "", {{"call_1", "f", deep_json}}, "", ""}};
  EXPECT_TRUE((*backend)->ApplyChatTemplate(args).ok());
  ChatTemplateInput tools;
  tools.messages = {{"user", "hi", {}, "", ""}};
  tools.tools = {{"f", "a tool", deep_json}};
  EXPECT_TRUE((*backend)->ApplyChatTemplate(tools).ok());

  ChatTemplateInput fine;
  fine.messages = {{"user", "hello", {}, "", ""}};
  EXPECT_TRUE((*backend)->ApplyChatTemplate(fine).ok());
}

}  // namespace
}  // namespace ember::server
