#include "server/responses_response.h"

#include <sys/random.h>

#include <atomic>
#include <random>

#include "util/hex.h"

namespace ember::server {

using nlohmann::json;

ResponseEcho EchoOf(const ResponsesRequest& req, std::string id, int64_t created_at, std::string model) {
  ResponseEcho e;
  e.id = std::move(id);
  e.created_at = created_at;
  e.model = std::move(model);
  e.instructions = req.instructions;
  e.previous_response_id = req.previous_response_id;
  e.max_output_tokens = req.completion.max_tokens;
  e.temperature = req.completion.sampling.temperature;
  e.top_p = req.completion.sampling.top_p;
  e.parallel_tool_calls = req.completion.parallel_tool_calls;
  e.store = req.store;
  e.user = req.user;
  e.metadata = req.metadata;
  e.tools = req.tools;
  e.tool_choice = req.tool_choice;
  e.text_format = req.text_format;
  return e;
}

std::string RandomId(const char* prefix) {
  uint64_t r[2] = {0, 0};
  if (::getrandom(r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    // No entropy yet (early boot): still unique per process, which is all an id must be.
    static std::atomic<uint64_t> counter{0};
    static const uint64_t seed = std::random_device{}();
    r[0] = seed ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    r[1] = ~r[0] * 0xC2B2AE3D27D4EB4Full;
  }
  return std::string(prefix) + Hex64(r[0]) + Hex64(r[1]);
}

bool IsResponseId(const std::string& id) {
  if (id.size() != 5 + 32 || id.rfind("resp_", 0) != 0) return false;
  for (size_t i = 5; i < id.size(); ++i) {
    const char c = id[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string ResponseStatusOf(const CompletionOutput& out) {
  return out.result.finish_reason == FinishReason::kLength && out.parsed.tool_calls.empty() ? "incomplete"
                                                                                             : "completed";
}

json ResponsesUsage(const GenerationResult& r) {
  return json{{"input_tokens", r.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", r.cached_tokens}, {"cache_tier", r.cache_tier}}},
              {"output_tokens", r.completion_tokens},
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

json MessageItem(const std::string& id, const std::string& text, const std::string& status) {
  json content = json::array();
  if (status != "in_progress") {
    content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}});
  }
  return json{{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json FunctionCallItem(const std::string& id, const ToolCall& call, const std::string& status) {
  return json{{"id", id},         {"type", "function_call"}, {"status", status},
              {"call_id", call.id}, {"name", call.name},      {"arguments", call.arguments_json}};
}

json ResponseJson(const ResponseEcho& e, const std::string& status, const json& output, const GenerationResult* result,
                  const json& error) {
  json incomplete = nullptr;
  if (status == "incomplete") incomplete = {{"reason", "max_output_tokens"}};
  return json{{"id", e.id},
              {"object", "response"},
              {"created_at", e.created_at},
              {"status", status},
              {"background", false},
              {"error", error},
              {"incomplete_details", incomplete},
              {"instructions", e.instructions ? json(*e.instructions) : json(nullptr)},
              {"max_output_tokens", e.max_output_tokens ? json(*e.max_output_tokens) : json(nullptr)},
              {"metadata", e.metadata},
              {"model", e.model},
              {"output", output},
              {"parallel_tool_calls", e.parallel_tool_calls},
              {"previous_response_id", e.previous_response_id.empty() ? json(nullptr) : json(e.previous_response_id)},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"store", e.store},
              {"temperature", e.temperature},
              {"text", {{"format", e.text_format}}},
              {"tool_choice", e.tool_choice},
              {"tools", e.tools},
              {"top_p", e.top_p},
              {"truncation", "disabled"},
              {"usage", result != nullptr ? ResponsesUsage(*result) : json(nullptr)},
              {"user", e.user.empty() ? json(nullptr) : json(e.user)}};
}

bool ResponseEventWriter::Emit(const std::string& type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = seq_++;
  return w_.Event(type, fields);
}

}  // namespace ember::server
