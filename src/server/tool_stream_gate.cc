#include "server/tool_stream_gate.h"

namespace ember::server {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kToolCall = "<tool_call>";

}  // namespace

ToolCallStreamGate::ToolCallStreamGate() : block_start_({std::string(kToolCall)}) {}

std::string ToolCallStreamGate::Release(std::string text) {
  sent_ += text.size();
  return text;
}

std::string ToolCallStreamGate::Push(std::string_view text) {
  all_.append(text);
  if (phase_ == Phase::kHolding) return "";
  if (phase_ == Phase::kText) {
    std::string out = block_start_.Push(text);
    if (block_start_.stopped()) phase_ = Phase::kHolding;
    return Release(std::move(out));
  }
  leading_.append(text);
  const size_t first = leading_.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";  // only whitespace so far: undecided
  const std::string_view start = std::string_view(leading_).substr(first);
  if (start[0] == '{' || start.starts_with(kPythonTag)) {
    phase_ = Phase::kHolding;
    return "";
  }
  // A prefix of a marker could still become one: wait for more text.
  if (start.size() < kPythonTag.size() && kPythonTag.starts_with(start)) return "";
  phase_ = Phase::kText;
  std::string held;
  held.swap(leading_);
  std::string out = block_start_.Push(held);
  if (block_start_.stopped()) phase_ = Phase::kHolding;
  return Release(std::move(out));
}

}  // namespace ember::server
