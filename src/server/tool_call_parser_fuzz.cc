// libFuzzer target for the tool-call parser (tool_call_parser.h): the input is a model's reply text.
// Any text must parse (a fumbled call stays content, never an error). Without calls the content is the
// reply unchanged; Qwen-style calls number at most the reply's <tool_call> tags; a Llama-style call is the
// whole reply (no content). Parsing is a pure function of the text, so a second parse must agree.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"
#include "util/check.h"

namespace {

constexpr size_t kMaxReplyBytes = 64 << 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxReplyBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const ember::server::ParsedReply r = ember::server::ParseToolCalls(text);
  EMBER_CHECK(r.content.size() <= text.size());
  if (r.tool_calls.empty()) EMBER_CHECK(r.content == text);
  size_t tags = 0;
  for (size_t at = text.find("<tool_call>"); at != std::string::npos; at = text.find("<tool_call>", at + 1)) ++tags;
  if (tags == 0) {
    EMBER_CHECK(r.tool_calls.size() <= 1);
    if (!r.tool_calls.empty()) EMBER_CHECK(r.content.empty());
  } else {
    EMBER_CHECK(r.tool_calls.size() <= tags);
  }
  for (const ember::server::ToolCall& c : r.tool_calls) {
    // Arguments are the object's JSON text, or a string the model pre-serialized (kept as written).
    EMBER_CHECK(c.id.empty());
    (void)nlohmann::json::parse(c.arguments_json, nullptr, /*allow_exceptions=*/false);
  }
  const ember::server::ParsedReply again = ember::server::ParseToolCalls(text);
  EMBER_CHECK(again.content == r.content && again.tool_calls.size() == r.tool_calls.size());
  return 0;
}
