// While a reply streams and tools were offered, decides which text may go to the client before it is
// known whether the reply is a tool call. Plain prose streams as usual; text from the start of a call
// on is held for ParseToolCalls at the end:
//   * a reply that opens with '{' or <|python_tag|> (Llama 3.x) is held whole;
//   * anything before a <tool_call> block (Qwen3) streams; a possible partial "<tool_call>" is held.
// Not thread-safe: one gate per generation.
#pragma once

#include <string>
#include <string_view>

#include "server/stop_matcher.h"

namespace ember::server {

class ToolCallStreamGate {
 public:
  ToolCallStreamGate();

  // Adds reply text; returns the part that may be streamed now.
  std::string Push(std::string_view text);
  // The reply text that was never returned by Push (to be parsed for tool calls).
  std::string Unsent() const { return all_.substr(sent_); }

 private:
  enum class Phase { kLeading, kText, kHolding };
  std::string Release(std::string text);

  Phase phase_ = Phase::kLeading;
  std::string all_;
  size_t sent_ = 0;
  std::string leading_;  // kLeading: text held until the reply's first characters decide the phase
  StopMatcher block_start_;
};

}  // namespace ember::server
