#include "server/responses_conversation.h"

#include <optional>
#include <string>

#include "server/request_fields.h"

namespace ember::server {

using nlohmann::json;

json ConversationToJson(const std::vector<ChatMessage>& messages) {
  json out = json::array();
  for (const ChatMessage& m : messages) {
    json j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) j["name"] = m.name;
    if (!m.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& c : m.tool_calls) {
        calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments_json}});
      }
      j["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(j));
  }
  return out;
}

StatusOr<std::vector<ChatMessage>> ConversationFromJson(const json& j) {
  if (!j.is_array()) return Corrupt("conversation is not an array");
  std::optional<ApiError> err;
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size() && !err; ++i) {
    const std::string path = "conversation[" + std::to_string(i) + "]";
    FieldReader root(j, "", &err);
    FieldReader f = root.Child(j[i], path);
    ChatMessage m;
    f.String("role", &m.role);
    f.String("content", &m.content);
    f.String("tool_call_id", &m.tool_call_id);
    f.String("name", &m.name);
    if (f.ok() && m.role != "user" && m.role != "assistant" && m.role != "system" && m.role != "tool") {
      f.Fail(path + ".role", "'" + path + ".role' is not a chat role");
    }
    if (const json* calls = f.Array("tool_calls")) {
      for (size_t c = 0; c < calls->size() && f.ok(); ++c) {
        FieldReader cf = f.Child((*calls)[c], path + ".tool_calls[" + std::to_string(c) + "]");
        ToolCall call;
        cf.String("id", &call.id);
        cf.String("name", &call.name);
        cf.String("arguments", &call.arguments_json);
        m.tool_calls.push_back(std::move(call));
      }
    }
    out.push_back(std::move(m));
  }
  if (err) return Corrupt(err->message);
  return out;
}

}  // namespace ember::server
