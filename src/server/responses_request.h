// POST /v1/responses bodies (OpenAI's Responses API) parsed into native form. `input` is a string or a list
// of items (messages with string or input_text/output_text content, function_call, function_call_output);
// tools are the API's flat function tools; text.format maps to CompletionRequest::response_format. JSON stops
// here: every read goes through FieldReader, so a wrong shape is a 400 naming the field ("input[2].content").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace ember::server {

struct ResponsesRequest {
  // kind kChat; `messages` holds only this request's input items (the route prepends `instructions` and
  // the previous response's conversation). Sampling, tools, tool_choice, response_format, max_tokens
  // (from max_output_tokens), stream and cache_salt are filled.
  CompletionRequest completion;
  std::optional<std::string> instructions;  // a system message before everything; not stored
  std::string previous_response_id;         // "" when none
  bool store = true;
  nlohmann::json metadata = nlohmann::json::object();  // echoed back; at most 16 string pairs
  // The request's own shapes, echoed in the response object as OpenAI does.
  nlohmann::json tools = nlohmann::json::array();
  nlohmann::json tool_choice = "auto";
  nlohmann::json text_format = {{"type", "text"}};
  std::string user;
};

// The Responses API's metadata limits: 16 pairs, keys up to 64 bytes, values up to 512.
inline constexpr size_t kMaxMetadataPairs = 16;
inline constexpr size_t kMaxMetadataKeyBytes = 64;
inline constexpr size_t kMaxMetadataValueBytes = 512;

ApiResult<ResponsesRequest> ParseResponsesRequest(const nlohmann::json& body);

// Names each `tool` turn that has no name after the function call it answers (some chat templates show
// the tool's name beside its result). Run on the whole conversation: the call may be in a stored turn.
void NameToolResults(std::vector<ChatMessage>* messages);

}  // namespace ember::server
