#include "server/tool_stream_gate.h"

#include <gtest/gtest.h>

namespace ember::server {
namespace {

std::string Feed(ToolCallStreamGate& g, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += g.Push(p);
  return out;
}

TEST(ToolCallStreamGate, ProseStreams) {
  ToolCallStreamGate g;
  EXPECT_EQ(Feed(g, {"The ", "answer ", "is 4."}), "The answer is 4.");
  EXPECT_EQ(g.Unsent(), "");
}

TEST(ToolCallStreamGate, QwenBlockIsHeldButTextBeforeItStreams) {
  ToolCallStreamGate g;
  EXPECT_EQ(Feed(g, {"Let me ", "check.\n<tool", "_call>{\"name\":", "\"f\"}</tool_call>"}), "Let me check.\n");
  EXPECT_EQ(g.Unsent(), "<tool_call>{\"name\":\"f\"}</tool_call>");
}

TEST(ToolCallStreamGate, LlamaJsonReplyIsHeldWhole) {
  ToolCallStreamGate g;
  EXPECT_EQ(Feed(g, {"  ", "{\"name\"", ": \"f\", \"parameters\": {}}"}), "");
  EXPECT_EQ(g.Unsent(), "  {\"name\": \"f\", \"parameters\": {}}");
}

TEST(ToolCallStreamGate, PythonTagIsHeld) {
  ToolCallStreamGate g;
  EXPECT_EQ(Feed(g, {"<|py", "thon_tag|>{\"name\": \"f\"}"}), "");
  EXPECT_EQ(g.Unsent(), "<|python_tag|>{\"name\": \"f\"}");
}

TEST(ToolCallStreamGate, FalseAlarmIsReleased) {
  ToolCallStreamGate g;
  EXPECT_EQ(g.Push("<"), "");              // could be <|python_tag|>
  EXPECT_EQ(g.Push("b>bold</b> text"), "<b>bold</b> text");
  EXPECT_EQ(g.Push(" <tool"), " ");        // could be <tool_call>
  EXPECT_EQ(g.Push("bar>"), "<toolbar>");
  EXPECT_EQ(g.Unsent(), "");
}

}  // namespace
}  // namespace ember::server
