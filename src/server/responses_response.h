// The Responses API's wire shapes: the `response` object (id "resp_…", status, output items, usage with
// input_tokens_details.cached_tokens), its output items (message with output_text parts, function_call)
// and the streaming events (response.created … response.completed, each with a sequence_number).
// `output_text` is not sent: the SDKs compute it from the output items.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_response.h"
#include "server/responses_request.h"
#include "server/sse_writer.h"

namespace ember::server {

// What a response object echoes of its request, plus its identity.
struct ResponseEcho {
  std::string id;          // resp_<32 hex>
  int64_t created_at = 0;  // unix seconds
  std::string model;
  std::optional<std::string> instructions;
  std::string previous_response_id;
  std::optional<int32_t> max_output_tokens;
  float temperature = 1, top_p = 1;
  bool parallel_tool_calls = true;
  bool store = true;
  std::string user;
  nlohmann::json metadata, tools, tool_choice, text_format;
};

ResponseEcho EchoOf(const ResponsesRequest& req, std::string id, int64_t created_at, std::string model);

// "<prefix><32 random hex digits>": response and item ids nobody can guess (a store lookup also needs the
// caller's tenant, but ids should not be enumerable either).
std::string RandomId(const char* prefix);
// True for what RandomId("resp_") makes (also the store's file names: nothing else is ever opened).
bool IsResponseId(const std::string& id);

// "completed", or "incomplete" when max_output_tokens (or the context) cut the reply.
std::string ResponseStatusOf(const CompletionOutput& out);
nlohmann::json ResponsesUsage(const GenerationResult& r);

nlohmann::json MessageItem(const std::string& id, const std::string& text, const std::string& status);
nlohmann::json FunctionCallItem(const std::string& id, const ToolCall& call, const std::string& status);

// The whole response object. `output` is the array of items; `result` null while in progress (no usage);
// `error` null unless status is "failed".
nlohmann::json ResponseJson(const ResponseEcho& echo, const std::string& status, const nlohmann::json& output,
                            const GenerationResult* result, const nlohmann::json& error);

// The SSE side: each event is `event: <type>` + `data: {type, sequence_number, ...}`, numbered from 0.
class ResponseEventWriter {
 public:
  explicit ResponseEventWriter(SseWriter& w) : w_(w) {}
  bool Emit(const std::string& type, nlohmann::json fields);
  int next_sequence() const { return seq_; }

 private:
  SseWriter& w_;
  int seq_ = 0;
};

}  // namespace ember::server
