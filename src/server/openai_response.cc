#include "server/openai_response.h"

namespace ember::server {

using nlohmann::json;

namespace {

json Bytes(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(c);
  return out;
}

json Nullable(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::string OpenAIFinishReason(const CompletionOutput& out) {
  if (!out.parsed.tool_calls.empty()) return "tool_calls";
  return out.result.finish_reason == FinishReason::kLength ? "length" : "stop";
}

json OpenAIUsage(const GenerationResult& r) {
  json u{{"prompt_tokens", r.prompt_tokens},
         {"completion_tokens", r.completion_tokens},
         {"total_tokens", r.prompt_tokens + r.completion_tokens},
         {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}, {"cache_tier", r.cache_tier}}}};
  // Speculative decoding: OpenAI's predicted-output counts (drafted tokens the model accepted / rejected).
  if (r.draft_tokens > 0) {
    u["completion_tokens_details"] = {{"accepted_prediction_tokens", r.draft_accepted},
                                      {"rejected_prediction_tokens", r.draft_tokens - r.draft_accepted}};
  }
  return u;
}

json OpenAIToolCalls(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments_json}}}};
    if (with_index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

json ChatLogprobs(const std::vector<TokenEvent>& tokens) {
  json content = json::array();
  for (const TokenEvent& t : tokens) {
    json top = json::array();
    for (const TokenLogprob& alt : t.top_logprobs) {
      top.push_back({{"token", alt.piece}, {"logprob", alt.logprob}, {"bytes", Bytes(alt.piece)}});
    }
    content.push_back({{"token", t.piece}, {"logprob", t.logprob}, {"bytes", Bytes(t.piece)}, {"top_logprobs", top}});
  }
  return json{{"content", content}};
}

json CompletionLogprobs(const std::vector<TokenEvent>& tokens) {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  size_t offset = 0;
  for (const TokenEvent& t : tokens) {
    out["tokens"].push_back(t.piece);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const TokenLogprob& alt : t.top_logprobs) top[alt.piece] = alt.logprob;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(offset);
    offset += t.piece.size();
  }
  return out;
}

json ChatCompletionJson(const ResponseMeta& meta, const CompletionOutput& out, bool logprobs) {
  json message = {{"role", "assistant"}, {"content", Nullable(out.parsed.content)}};
  if (!out.parsed.tool_calls.empty()) message["tool_calls"] = OpenAIToolCalls(out.parsed.tool_calls, false);
  return json{{"id", meta.id},
              {"object", "chat.completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "ember"},
              {"choices",
               {{{"index", 0},
                 {"message", std::move(message)},
                 {"logprobs", logprobs ? ChatLogprobs(out.tokens) : json(nullptr)},
                 {"finish_reason", OpenAIFinishReason(out)}}}},
              {"usage", OpenAIUsage(out.result)}};
}

json TextCompletionJson(const ResponseMeta& meta, const CompletionOutput& out, bool logprobs) {
  return json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "ember"},
              {"choices",
               {{{"index", 0},
                 {"text", out.text},
                 {"logprobs", logprobs ? CompletionLogprobs(out.tokens) : json(nullptr)},
                 {"finish_reason", OpenAIFinishReason(out)}}}},
              {"usage", OpenAIUsage(out.result)}};
}

json ChatChunkJson(const ResponseMeta& meta, json delta, const std::string& finish_reason, const json& logprobs) {
  return json{{"id", meta.id},
              {"object", "chat.completion.chunk"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "ember"},
              {"choices",
               {{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", logprobs},
                 {"finish_reason", Nullable(finish_reason)}}}}};
}

json TextChunkJson(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                   const json& logprobs) {
  return json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices",
               {{{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", Nullable(finish_reason)}}}}};
}

json UsageChunkJson(const ResponseMeta& meta, const char* object, const GenerationResult& r) {
  return json{{"id", meta.id},     {"object", object},          {"created", meta.created},
              {"model", meta.model}, {"choices", json::array()}, {"usage", OpenAIUsage(r)}};
}

}  // namespace ember::server
