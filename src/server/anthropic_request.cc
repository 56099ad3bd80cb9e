// Parsing of Anthropic Messages request bodies into CompletionRequest. Content blocks map to the OpenAI
// shapes the rest of the server uses: text blocks concatenate, an assistant `tool_use` block becomes a
// ToolCall, a user `tool_result` block becomes a role "tool" message answering its tool_use_id.
#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

std::string Index(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

// tool_result content: a string or an array of text blocks.
std::string ToolResultText(const json& content, const std::string& path, FieldReader& r) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) {
    r.Fail(path, "'" + path + "' must be a string or an array of text blocks");
    return text;
  }
  for (const json& b : content) {
    if (b.is_object() && b.value("type", "") == "text" && b.contains("text") && b["text"].is_string()) {
      text += b["text"].get<std::string>();
    } else {
      r.Fail(path, "'" + path + "' may only hold text blocks");
      return text;
    }
  }
  return text;
}

// Appends the messages one Anthropic turn becomes: tool results first (they answer the previous
// assistant turn), then the turn's own text and tool calls.
void ReadBlocks(const json& blocks, const std::string& path, const std::string& role, FieldReader& r,
                std::vector<ChatMessage>* out) {
  ChatMessage turn;
  turn.role = role;
  for (size_t i = 0; i < blocks.size() && r.ok(); ++i) {
    const json& b = blocks[i];
    const std::string p = Index(path, i);
    const std::string type = b.is_object() ? b.value("type", "") : "";
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      turn.content += b["text"].get<std::string>();
    } else if (type == "tool_use" && b.contains("name") && b["name"].is_string()) {
      turn.tool_calls.push_back({b.value("id", ""), b["name"].get<std::string>(),
                                 b.contains("input") ? b["input"].dump() : "{}"});
    } else if (type == "tool_result") {
      ChatMessage result;
      result.role = "tool";
      result.tool_call_id = b.value("tool_use_id", "");
      result.content = ToolResultText(b.contains("content") ? b["content"] : json(), p + ".content", r);
      out->push_back(std::move(result));
    } else if (type == "thinking" || type == "redacted_thinking") {
      continue;  // earlier reasoning is not replayed to the model
    } else {
      return r.Fail(p, "'" + p + "' must be a text, tool_use or tool_result block");
    }
  }
  if (!turn.content.empty() || !turn.tool_calls.empty()) out->push_back(std::move(turn));
}

void ReadMessages(FieldReader& r, std::vector<ChatMessage>* out) {
  const json* messages = r.Array("messages");
  if (r.ok() && (messages == nullptr || messages->empty())) {
    return r.Fail("messages", "'messages' is required and must be a non-empty array");
  }
  for (size_t i = 0; messages != nullptr && i < messages->size() && r.ok(); ++i) {
    const json& m = (*messages)[i];
    const std::string p = Index("messages", i);
    const std::string role = m.is_object() ? m.value("role", "") : "";
    if (role != "user" && role != "assistant") return r.Fail(p + ".role", "'" + p + ".role' must be user or assistant");
    const json content = m.contains("content") ? m["content"] : json();
    if (content.is_string()) {
      out->push_back({role, content.get<std::string>(), {}, "", ""});
    } else if (content.is_array()) {
      ReadBlocks(content, p + ".content", role, r, out);
    } else {
      return r.Fail(p + ".content", "'" + p + ".content' must be a string or an array of content blocks");
    }
  }
}

void ReadSystem(FieldReader& r, std::vector<ChatMessage>* out) {
  const json* system = r.Any("system");
  if (system == nullptr) return;
  std::string text;
  if (system->is_string()) {
    text = system->get<std::string>();
  } else if (system->is_array()) {
    for (const json& b : *system) {
      if (!b.is_object() || !b.contains("text") || !b["text"].is_string()) {
        return r.Fail("system", "'system' must be a string or an array of text blocks");
      }
      text += b["text"].get<std::string>();
    }
  } else {
    return r.Fail("system", "'system' must be a string or an array of text blocks");
  }
  out->insert(out->begin(), ChatMessage{"system", text, {}, "", ""});
}

void ReadTools(FieldReader& r, CompletionRequest* out) {
  const json* tools = r.Array("tools");
  std::string choice = "auto";
  if (const json* tc = r.Object("tool_choice")) choice = tc->value("type", "auto");
  if (tools == nullptr || choice == "none") return;
  for (size_t i = 0; i < tools->size() && r.ok(); ++i) {
    const std::string p = Index("tools", i);
    std::optional<ApiError> err;
    FieldReader t((*tools)[i], p + ".", &err);
    ToolSpec spec;
    t.String("name", &spec.name);
    t.String("description", &spec.description);
    const json* schema = t.Object("input_schema");
    spec.parameters_json = schema == nullptr ? "{}" : schema->dump();
    if (!(*tools)[i].is_object() || spec.name.empty()) t.Fail(p + ".name", "'" + p + ".name' is required");
    if (err) return r.Fail(err->param, err->message);
    out->tools.push_back(std::move(spec));
  }
}

}  // namespace

ApiResult<CompletionRequest> ParseAnthropicRequest(const json& body, bool require_max_tokens) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  CompletionRequest out;
  out.kind = ApiKind::kMessages;
  ReadCommonSampling(r, &out);
  r.OptionalInt("max_tokens", &out.max_tokens, 1, INT32_MAX);
  if (require_max_tokens && r.ok() && !out.max_tokens) r.Fail("max_tokens", "'max_tokens' is required");
  r.StringOrList("stop_sequences", &out.stop, 16);
  if (const json* meta = r.Object("metadata")) {
    std::optional<ApiError> merr;
    FieldReader m(*meta, "metadata.", &merr);
    m.String("user_id", &out.user);
    if (merr) r.Fail(merr->param, merr->message);
  }
  ReadSystem(r, &out.messages);
  ReadMessages(r, &out.messages);
  ReadTools(r, &out);
  if (err) return *err;
  return out;
}

}  // namespace ember::server
