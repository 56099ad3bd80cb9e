#include "server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "server/json_input.h"

#include <optional>

namespace ember::server {
namespace {

using nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// {"name": string, <args_key>: object} -> ToolCall; anything else (also JSON nested deeper than
// kMaxJsonDepth: the model's text is as untrusted as a client's) -> nullopt.
std::optional<ToolCall> CallFromJson(const std::string& text) {
  StatusOr<json> parsed = ParseJsonLimited(text);
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  const json& j = *parsed;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  ToolCall call;
  call.name = name->get<std::string>();
  if (args == j.end()) {
    call.arguments_json = "{}";
  } else if (args->is_object()) {
    call.arguments_json = args->dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (args->is_string()) {
    call.arguments_json = args->get<std::string>();  // some models emit the arguments pre-serialized
  } else {
    return std::nullopt;
  }
  return call;
}

ParsedReply ParseQwen(const std::string& text) {
  ParsedReply out;
  std::string content;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string::npos) break;
    const size_t body = open + kOpen.size();
    const size_t close = text.find(kClose, body);
    const size_t body_end = close == std::string::npos ? text.size() : close;
    std::optional<ToolCall> call = CallFromJson(Trim(text.substr(body, body_end - body)));
    if (!call) break;  // malformed block: leave it and the rest as content
    content += text.substr(pos, open - pos);
    out.tool_calls.push_back(std::move(*call));
    pos = close == std::string::npos ? text.size() : close + kClose.size();
  }
  content += text.substr(pos);
  out.content = out.tool_calls.empty() ? text : Trim(content);
  return out;
}

}  // namespace

ParsedReply ParseToolCalls(const std::string& text) {
  if (text.find(kOpen) != std::string::npos) return ParseQwen(text);
  std::string body = Trim(text);
  if (body.rfind(kPythonTag, 0) == 0) body = Trim(body.substr(kPythonTag.size()));
  if (!body.empty() && body.front() == '{') {
    if (std::optional<ToolCall> call = CallFromJson(body)) return ParsedReply{"", {std::move(*call)}};
  }
  return ParsedReply{text, {}};
}

}  // namespace ember::server
