// The Anthropic Messages wire shapes: the message object, and the streaming event grammar
//   message_start, (content_block_start, ping?, content_block_delta*, content_block_stop)*,
//   message_delta (stop_reason, usage), message_stop.
// usage.input_tokens counts only uncached prompt tokens; cache_read_input_tokens the cached ones.
#pragma once

#include <nlohmann/json.hpp>

#include "server/openai_response.h"

namespace ember::server {

// "end_turn", "max_tokens", "stop_sequence" or "tool_use".
std::string AnthropicStopReason(const CompletionOutput& out);
nlohmann::json AnthropicUsage(const GenerationResult& r);
// A tool call's arguments as Anthropic's `input` object ({} when they are not a JSON object).
nlohmann::json ToolInput(const std::string& arguments_json);
nlohmann::json AnthropicContent(const CompletionOutput& out);
nlohmann::json AnthropicMessageJson(const ResponseMeta& meta, const CompletionOutput& out);

// Stream events (payloads; the event name is payload["type"]).
nlohmann::json MessageStartEvent(const ResponseMeta& meta, int32_t prompt_tokens);
nlohmann::json TextBlockStartEvent(int index);
nlohmann::json TextDeltaEvent(int index, const std::string& text);
nlohmann::json ToolUseBlockStartEvent(int index, const ToolCall& call);
nlohmann::json InputJsonDeltaEvent(int index, const std::string& partial_json);
nlohmann::json BlockStopEvent(int index);
nlohmann::json MessageDeltaEvent(const CompletionOutput& out);
nlohmann::json MessageStopEvent();
nlohmann::json PingEvent();

}  // namespace ember::server
