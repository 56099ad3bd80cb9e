// The native form of every generation request, whichever API it came through. The OpenAI and Anthropic
// parsers fill it at the edge; nothing after them touches request JSON.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"
#include "server/backend.h"

namespace ember::server {

enum class ApiKind { kChat, kCompletion, kMessages };

// What the request says about tool calls. OpenAI "none"/"auto"/"required"/{"function":{name}};
// Anthropic none/auto/any/tool. kRequired and kFunction force a call (tool_grammar.h).
enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

// Structured output: OpenAI response_format (and the Responses API's text.format).
enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

struct CompletionRequest {
  ApiKind kind = ApiKind::kChat;
  std::string model;
  // Chat and Messages: the conversation. Completion: `prompt_text` or (token ids) `prompt_ids`.
  std::vector<ChatMessage> messages;
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;
  std::vector<ToolSpec> tools;             // empty when tool_choice is "none"
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;            // kFunction: the tool that must be called
  bool parallel_tool_calls = true;         // false: at most one call per reply
  std::vector<std::pair<std::string, std::string>> template_kwargs;  // name -> JSON text

  SamplingParams sampling;
  std::optional<int32_t> max_tokens;       // absent: up to the context length
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;              // OpenAI stream_options.include_usage
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::string user;
  std::string cache_salt;

  // Output constraints (output_constraint.h); at most one of response_format, grammar and a forced tool
  // choice may be given.
  ResponseFormat response_format = ResponseFormat::kText;
  std::string json_schema;                 // kJsonSchema: the schema as JSON text
  std::string json_schema_name;            // response_format.json_schema.name
  bool json_schema_strict = false;
  std::string grammar;                     // GBNF text (llama.cpp's `grammar` field)
};

// Limits the parsers enforce beyond the body's own (size, kMaxJsonDepth): stop strings are matched
// against every generated token, so their number and length bound that work.
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 1024;

// POST /v1/chat/completions and POST /v1/completions bodies.
ApiResult<CompletionRequest> ParseOpenAIChatRequest(const nlohmann::json& body);
ApiResult<CompletionRequest> ParseOpenAICompletionRequest(const nlohmann::json& body);
// POST /v1/messages (max_tokens required) and /v1/messages/count_tokens (no max_tokens).
ApiResult<CompletionRequest> ParseAnthropicRequest(const nlohmann::json& body, bool require_max_tokens);

// Shared by both parsers: the sampling fields with the same names in both APIs.
class FieldReader;
void ReadCommonSampling(FieldReader& r, CompletionRequest* out);
// After tools and tool_choice are read: a forced choice needs tools (a named one among them), else a 400
// on "tool_choice"; kNone clears the tools so the template offers none.
void FinishToolChoice(FieldReader& r, CompletionRequest* out);

}  // namespace ember::server
