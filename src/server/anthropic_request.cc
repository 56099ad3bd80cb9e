// Parsing of Anthropic Messages request bodies into CompletionRequest. Content blocks map to the OpenAI
// shapes the rest of the server uses: text blocks concatenate, an assistant `tool_use` block becomes a
// ToolCall, a user `tool_result` block becomes a role "tool" message answering its tool_use_id (its text
// prefixed "Error: " when is_error is true), an assistant `thinking` block becomes the turn's
// reasoning_content (`redacted_thinking` is dropped). Every read goes through FieldReader, so a wrong type
// anywhere is a 400 naming the field.
#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

// What a tool_result with is_error: true starts with when it reaches the template (docs/server.md).
constexpr const char* kToolErrorPrefix = "Error: ";
constexpr size_t kMaxUserIdBytes = 256;  // Anthropic's limit on metadata.user_id

// A {"type":"text","text":...} block's text; anything else fails with `what` at the block's path.
std::string TextBlock(const json& b, const std::string& p, const char* what, FieldReader& r) {
  FieldReader f = r.Child(b, p);
  std::string type, text;
  f.String("type", &type);
  if (f.ok() && type.empty()) f.Fail(p + ".type", "'" + p + ".type' is required");
  if (f.ok() && type != "text") f.Fail(p, "'" + p + "' " + what);
  if (f.ok() && f.Any("text") == nullptr) f.Fail(p + ".text", "'" + p + ".text' is required");
  f.String("text", &text);
  return text;
}

// tool_result content: a string or an array of text blocks.
std::string ToolResultText(const json& content, const std::string& path, FieldReader& r) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) {
    r.Fail(path, "'" + path + "' must be a string or an array of text blocks");
    return text;
  }
  for (size_t i = 0; i < content.size() && r.ok(); ++i) {
    text += TextBlock(content[i], IndexPath(path, i), "may only hold text blocks", r);
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
    const std::string p = IndexPath(path, i);
    FieldReader b = r.Child(blocks[i], p);
    std::string type;
    b.String("type", &type);
    if (b.ok() && type.empty()) b.Fail(p + ".type", "'" + p + ".type' is required");
    if (!b.ok()) return;
    if (type == "text") {
      turn.content += TextBlock(blocks[i], p, "", r);
    } else if (type == "tool_use") {
      ToolCall call;
      b.String("id", &call.id);
      b.String("name", &call.name);
      if (b.ok() && call.name.empty()) b.Fail(p + ".name", "'" + p + ".name' is required");
      const json* input = b.Object("input");
      call.arguments_json = input == nullptr ? "{}" : input->dump();
      turn.tool_calls.push_back(std::move(call));
    } else if (type == "tool_result") {
      ChatMessage result;
      result.role = "tool";
      b.String("tool_use_id", &result.tool_call_id);
      bool is_error = false;
      b.Bool("is_error", &is_error);
      if (const json* content = b.Any("content")) result.content = ToolResultText(*content, p + ".content", r);
      // No chat template has a field for a failed call, so the mark is in the text the model reads.
      if (is_error) result.content = kToolErrorPrefix + result.content;
      out->push_back(std::move(result));
    } else if (type == "thinking") {
      // Earlier reasoning goes to the template as reasoning_content: Qwen3-style templates render it in
      // <think>, the others never read it (so it is dropped there). The signature is only type-checked.
      std::string thinking, signature;
      if (b.ok() && b.Any("thinking") == nullptr) b.Fail(p + ".thinking", "'" + p + ".thinking' is required");
      b.String("thinking", &thinking);
      b.String("signature", &signature);
      if (b.ok() && role != "assistant") b.Fail(p, "'" + p + "': thinking blocks belong to assistant turns");
      turn.reasoning_content += thinking;
    } else if (type == "redacted_thinking") {
      std::string data;  // encrypted by another provider: nothing a local model could read
      b.String("data", &data);
      if (b.ok() && role != "assistant") b.Fail(p, "'" + p + "': redacted_thinking blocks belong to assistant turns");
    } else {
      return r.Fail(p, "'" + p + "' must be a text, tool_use, tool_result, thinking or redacted_thinking block");
    }
  }
  if (!turn.content.empty() || !turn.tool_calls.empty() || !turn.reasoning_content.empty()) {
    out->push_back(std::move(turn));
  }
}

void ReadMessages(FieldReader& r, std::vector<ChatMessage>* out) {
  const json* messages = r.Array("messages");
  if (r.ok() && (messages == nullptr || messages->empty())) {
    return r.Fail("messages", "'messages' is required and must be a non-empty array");
  }
  for (size_t i = 0; messages != nullptr && i < messages->size() && r.ok(); ++i) {
    const std::string p = IndexPath("messages", i);
    FieldReader m = r.Child((*messages)[i], p);
    std::string role;
    m.String("role", &role);
    if (m.ok() && role != "user" && role != "assistant") {
      return m.Fail(p + ".role", "'" + p + ".role' must be user or assistant");
    }
    const json* content = m.Any("content");
    if (!m.ok()) return;
    if (content != nullptr && content->is_string()) {
      out->push_back({role, content->get<std::string>(), {}, "", ""});
    } else if (content != nullptr && content->is_array()) {
      ReadBlocks(*content, p + ".content", role, r, out);
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
    for (size_t i = 0; i < system->size() && r.ok(); ++i) {
      text += TextBlock((*system)[i], IndexPath("system", i), "must be a text block", r);
    }
  } else {
    return r.Fail("system", "'system' must be a string or an array of text blocks");
  }
  out->insert(out->begin(), ChatMessage{"system", text, {}, "", ""});
}

// {"type":"auto"|"any"|"tool"|"none", "name":..., "disable_parallel_tool_use":bool}. "any" and "tool"
// force a call (tool_grammar.h), as OpenAI's "required" and named function do; "none" offers no tools.
void ReadToolChoice(FieldReader& r, CompletionRequest* out) {
  const json* tc = r.Object("tool_choice");
  if (tc == nullptr) return;
  FieldReader t = r.Child(*tc, "tool_choice");
  std::string type = "auto";
  t.String("type", &type);
  t.String("name", &out->tool_choice_name);
  bool disable_parallel = false;
  t.Bool("disable_parallel_tool_use", &disable_parallel);
  if (!t.ok()) return;
  out->parallel_tool_calls = !disable_parallel;
  if (type == "any") {
    out->tool_choice = ToolChoice::kRequired;
  } else if (type == "tool") {
    out->tool_choice = ToolChoice::kFunction;
    if (out->tool_choice_name.empty()) t.Fail("tool_choice.name", "'tool_choice.name' is required for type tool");
  } else if (type == "none") {
    out->tool_choice = ToolChoice::kNone;
  } else if (type != "auto") {
    t.Fail("tool_choice.type", "'tool_choice.type' must be auto, any, tool or none");
  }
}

void ReadTools(FieldReader& r, CompletionRequest* out) {
  const json* tools = r.Array("tools");
  ReadToolChoice(r, out);
  for (size_t i = 0; tools != nullptr && i < tools->size() && r.ok(); ++i) {
    const std::string p = IndexPath("tools", i);
    FieldReader t = r.Child((*tools)[i], p);
    ToolSpec spec;
    t.String("name", &spec.name);
    t.String("description", &spec.description);
    const json* schema = t.Object("input_schema");
    spec.parameters_json = schema == nullptr ? "{}" : schema->dump();
    if (t.ok() && spec.name.empty()) t.Fail(p + ".name", "'" + p + ".name' is required");
    out->tools.push_back(std::move(spec));
  }
  FinishToolChoice(r, out);
}

// metadata.user_id names the caller's end user. It is NOT a prompt-cache tenant (docs/llama-server-compat.md,
// "Anthropic"): tenants are API keys and cache_salt; one app's users share its cached system prompt.
void ReadMetadata(FieldReader& r, CompletionRequest* out) {
  const json* meta = r.Object("metadata");
  if (meta == nullptr) return;
  FieldReader m = r.Child(*meta, "metadata");
  m.String("user_id", &out->user);
  if (m.ok() && out->user.size() > kMaxUserIdBytes) {
    m.Fail("metadata.user_id", "'metadata.user_id' is longer than " + std::to_string(kMaxUserIdBytes) + " bytes");
  }
}

// thinking: {"type":"enabled","budget_tokens":N} | {"type":"disabled"}. ember has no thinking budget;
// the switch reaches templates that know it as enable_thinking (Qwen3), others ignore it.
void ReadThinking(FieldReader& r, CompletionRequest* out) {
  const json* thinking = r.Object("thinking");
  if (thinking == nullptr) return;
  FieldReader t = r.Child(*thinking, "thinking");
  std::string type;
  std::optional<int32_t> budget;
  t.String("type", &type);
  t.OptionalInt("budget_tokens", &budget, 1, INT32_MAX);
  if (t.ok() && type != "enabled" && type != "disabled") {
    return t.Fail("thinking.type", "'thinking.type' must be enabled or disabled");
  }
  if (t.ok()) out->template_kwargs.emplace_back("enable_thinking", type == "disabled" ? "false" : "true");
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
  r.StringOrList("stop_sequences", &out.stop, kMaxStopStrings, kMaxStopBytes);
  ReadMetadata(r, &out);
  ReadThinking(r, &out);
  ReadSystem(r, &out.messages);
  ReadMessages(r, &out.messages);
  ReadTools(r, &out);
  if (err) return *err;
  return out;
}

}  // namespace ember::server
