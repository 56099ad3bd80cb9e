// The OpenAI wire shapes of a finished or streaming generation: chat.completion, chat.completion.chunk,
// text_completion (also its stream chunks), usage with prompt_tokens_details.cached_tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/backend.h"
#include "server/tool_call_parser.h"

namespace ember::server {

struct ResponseMeta {
  std::string id;        // chatcmpl-N / cmpl-N / msg_N
  int64_t created = 0;   // unix seconds
  std::string model;
};

// Everything a response is built from, gathered from the job's events.
struct CompletionOutput {
  std::string text;                  // the reply text, stop strings removed
  std::vector<TokenEvent> tokens;    // for logprobs
  GenerationResult result;
  std::string stop_sequence;
  ParsedReply parsed;                // tool calls split out when tools were offered; else {text, {}}
};

// "stop", "length" or "tool_calls".
std::string OpenAIFinishReason(const CompletionOutput& out);
nlohmann::json OpenAIUsage(const GenerationResult& r);
nlohmann::json OpenAIToolCalls(const std::vector<ToolCall>& calls, bool with_index);
nlohmann::json ChatLogprobs(const std::vector<TokenEvent>& tokens);
nlohmann::json CompletionLogprobs(const std::vector<TokenEvent>& tokens);

nlohmann::json ChatCompletionJson(const ResponseMeta& meta, const CompletionOutput& out, bool logprobs);
nlohmann::json TextCompletionJson(const ResponseMeta& meta, const CompletionOutput& out, bool logprobs);

// Stream chunks. `finish_reason` "" means null (more to come).
nlohmann::json ChatChunkJson(const ResponseMeta& meta, nlohmann::json delta, const std::string& finish_reason,
                             const nlohmann::json& logprobs);
nlohmann::json TextChunkJson(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                             const nlohmann::json& logprobs);
// The final `choices: []` chunk carrying usage (stream_options.include_usage).
nlohmann::json UsageChunkJson(const ResponseMeta& meta, const char* object, const GenerationResult& r);

}  // namespace ember::server
