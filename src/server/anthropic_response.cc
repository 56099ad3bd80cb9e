#include "server/anthropic_response.h"

#include "server/json_input.h"

namespace ember::server {

using nlohmann::json;

std::string AnthropicStopReason(const CompletionOutput& out) {
  if (!out.parsed.tool_calls.empty()) return "tool_use";
  if (!out.stop_sequence.empty()) return "stop_sequence";
  return out.result.finish_reason == FinishReason::kLength ? "max_tokens" : "end_turn";
}

json AnthropicUsage(const GenerationResult& r) {
  return json{{"input_tokens", r.prompt_tokens - r.cached_tokens},
              {"output_tokens", r.completion_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", r.cached_tokens},
              {"cache_tier", r.cache_tier}};
}

// A tool's arguments as an object (Anthropic's `input`); text that is not a JSON object (or nests deeper
// than kMaxJsonDepth) becomes {}.
json ToolInput(const std::string& arguments_json) {
  StatusOr<json> input = ParseJsonLimited(arguments_json);
  return input.ok() && input->is_object() ? std::move(input).value() : json::object();
}

json AnthropicContent(const CompletionOutput& out) {
  json content = json::array();
  if (!out.parsed.content.empty()) content.push_back({{"type", "text"}, {"text", out.parsed.content}});
  for (const ToolCall& c : out.parsed.tool_calls) {
    content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", ToolInput(c.arguments_json)}});
  }
  return content;
}

json AnthropicMessageJson(const ResponseMeta& meta, const CompletionOutput& out) {
  return json{{"id", meta.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", meta.model},
              {"content", AnthropicContent(out)},
              {"stop_reason", AnthropicStopReason(out)},
              {"stop_sequence", out.stop_sequence.empty() ? json(nullptr) : json(out.stop_sequence)},
              {"usage", AnthropicUsage(out.result)}};
}

json MessageStartEvent(const ResponseMeta& meta, int32_t prompt_tokens) {
  return json{{"type", "message_start"},
              {"message",
               {{"id", meta.id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", meta.model},
                {"content", json::array()},
                {"stop_reason", nullptr},
                {"stop_sequence", nullptr},
                {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", 0}}}}}};
}

json TextBlockStartEvent(int index) {
  return json{{"type", "content_block_start"}, {"index", index}, {"content_block", {{"type", "text"}, {"text", ""}}}};
}

json TextDeltaEvent(int index, const std::string& text) {
  return json{{"type", "content_block_delta"}, {"index", index}, {"delta", {{"type", "text_delta"}, {"text", text}}}};
}

json ToolUseBlockStartEvent(int index, const ToolCall& call) {
  return json{{"type", "content_block_start"},
              {"index", index},
              {"content_block", {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object()}}}};
}

json InputJsonDeltaEvent(int index, const std::string& partial_json) {
  return json{{"type", "content_block_delta"},
              {"index", index},
              {"delta", {{"type", "input_json_delta"}, {"partial_json", partial_json}}}};
}

json BlockStopEvent(int index) { return json{{"type", "content_block_stop"}, {"index", index}}; }

// Carries the final usage: the cache hit is only known once prefill ran, after message_start was sent.
json MessageDeltaEvent(const CompletionOutput& out) {
  return json{{"type", "message_delta"},
              {"delta",
               {{"stop_reason", AnthropicStopReason(out)},
                {"stop_sequence", out.stop_sequence.empty() ? json(nullptr) : json(out.stop_sequence)}}},
              {"usage", AnthropicUsage(out.result)}};
}

json MessageStopEvent() { return json{{"type", "message_stop"}}; }
json PingEvent() { return json{{"type", "ping"}}; }

}  // namespace ember::server
