// The `grammar` request field (llama-server's GBNF) on both OpenAI routes: read into
// CompletionRequest::grammar; a wrong type is a 400 naming the field. (Compiling it, and the 400 of a
// bad grammar, are BuildOutputGrammar's; the reply following it is tests/e2e/grammar.test.mjs.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/completion_request.h"

namespace ember::server {
namespace {

using nlohmann::json;

TEST(GrammarField, ChatAndCompletionsReadIt) {
  const std::string g = "root ::= \"yes\" | \"no\"";
  ApiResult<CompletionRequest> chat = ParseOpenAIChatRequest(
      json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"grammar", g}});
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_EQ(chat.value().grammar, g);
  ApiResult<CompletionRequest> comp = ParseOpenAICompletionRequest(json{{"prompt", "x"}, {"grammar", g}});
  ASSERT_TRUE(comp.ok()) << comp.error().message;
  EXPECT_EQ(comp.value().grammar, g);
  ApiResult<CompletionRequest> none = ParseOpenAICompletionRequest(json{{"prompt", "x"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().grammar.empty());
}

TEST(GrammarField, WrongTypeNamesTheField) {
  ApiResult<CompletionRequest> r = ParseOpenAICompletionRequest(json{{"prompt", "x"}, {"grammar", 5}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("grammar"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace ember::server
