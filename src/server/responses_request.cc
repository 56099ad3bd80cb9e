// Parsing of POST /v1/responses bodies. Input items become the ChatMessages the chat template renders:
// a message item is one turn, consecutive function_call items join one assistant turn (parallel calls),
// a function_call_output is a `tool` turn answering its call_id.
#include "server/responses_request.h"

#include <cstdint>
#include <string>

#include "server/json_input.h"
#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

// Content: a string or a list of parts; input_text and output_text parts are concatenated (the model sees
// one string). Images, files and audio are refused naming the part.
std::string ReadContent(const json& content, const std::string& path, FieldReader& r) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    r.Fail(path, "'" + path + "' must be a string or an array of content parts");
    return "";
  }
  std::string text;
  for (size_t i = 0; i < content.size() && r.ok(); ++i) {
    const std::string p = IndexPath(path, i);
    FieldReader f = r.Child(content[i], p);
    std::string type, piece;
    f.String("type", &type);
    if (f.ok() && type != "input_text" && type != "output_text" && type != "text") {
      f.Fail(p + ".type", "'" + p + ".type' must be input_text or output_text; only text is supported, not '" +
                              type.substr(0, 64) + "'");
    }
    if (f.ok() && f.Any("text") == nullptr) f.Fail(p + ".text", "'" + p + ".text' is required");
    f.String("text", &piece);
    text += piece;
  }
  return text;
}

void RequireString(FieldReader& f, const char* key, std::string* out) {
  f.String(key, out);
  if (f.ok() && out->empty()) f.Fail(f.Path(key), "'" + f.Path(key) + "' is required");
}

void ReadItem(const json& item, size_t i, FieldReader& r, std::vector<ChatMessage>* out) {
  const std::string path = IndexPath("input", i);
  FieldReader f = r.Child(item, path);
  std::string type;
  f.String("type", &type);
  if (!f.ok()) return;
  if (type.empty() || type == "message") {
    ChatMessage m;
    f.String("role", &m.role);
    if (m.role == "developer") m.role = "system";  // the newer name for the same thing
    if (f.ok() && m.role != "user" && m.role != "assistant" && m.role != "system") {
      return f.Fail(path + ".role", "'" + path + ".role' must be user, assistant, system or developer");
    }
    const json* content = f.Any("content");
    if (f.ok() && content == nullptr) return f.Fail(path + ".content", "'" + path + ".content' is required");
    if (content != nullptr) m.content = ReadContent(*content, path + ".content", f);
    out->push_back(std::move(m));
    return;
  }
  if (type == "function_call") {
    ToolCall call;
    RequireString(f, "call_id", &call.id);
    RequireString(f, "name", &call.name);
    ReadArgumentsText(f, true, &call.arguments_json);
    if (!f.ok()) return;
    // Parallel calls arrive as consecutive items: one assistant turn, as the model produced them.
    if (out->empty() || out->back().role != "assistant") {
      out->push_back(ChatMessage{"assistant", "", {}, "", ""});
    }
    out->back().tool_calls.push_back(std::move(call));
    return;
  }
  if (type == "function_call_output") {
    ChatMessage m;
    m.role = "tool";
    RequireString(f, "call_id", &m.tool_call_id);
    const json* output = f.Any("output");
    if (f.ok() && output == nullptr) return f.Fail(path + ".output", "'" + path + ".output' is required");
    if (output != nullptr) m.content = ReadContent(*output, path + ".output", f);
    out->push_back(std::move(m));
    return;
  }
  f.Fail(path + ".type", "'" + path + ".type' must be message, function_call or function_call_output, not '" +
                             type.substr(0, 64) + "'");
}

void ReadInput(FieldReader& r, CompletionRequest* out) {
  const json* input = r.Any("input");
  if (!r.ok()) return;
  if (input == nullptr) return r.Fail("input", "'input' is required");
  if (input->is_string()) {
    out->messages.push_back(ChatMessage{"user", input->get<std::string>(), {}, "", ""});
    return;
  }
  if (!input->is_array()) return r.Fail("input", "'input' must be a string or an array of input items");
  if (input->empty()) return r.Fail("input", "'input' must not be empty");
  for (size_t i = 0; i < input->size() && r.ok(); ++i) ReadItem((*input)[i], i, r, &out->messages);
}

// Flat function tools: {type:"function", name, description, parameters, strict}.
void ReadTools(FieldReader& r, ResponsesRequest* out) {
  const json* tools = r.Array("tools");
  if (tools == nullptr) return;
  for (size_t i = 0; i < tools->size() && r.ok(); ++i) {
    const std::string p = IndexPath("tools", i);
    FieldReader t = r.Child((*tools)[i], p);
    std::string type;
    t.String("type", &type);
    if (t.ok() && type != "function") {
      return t.Fail(p + ".type", "'" + p + ".type' must be \"function\" (built-in tools are not served)");
    }
    ToolSpec spec;
    RequireString(t, "name", &spec.name);
    t.String("description", &spec.description);
    const json* params = t.Object("parameters");
    bool strict = false;
    t.Bool("strict", &strict);
    spec.parameters_json = params == nullptr ? "{}" : params->dump();
    if (!t.ok()) return;
    out->completion.tools.push_back(std::move(spec));
  }
  out->tools = *tools;
}

// "none" | "auto" | "required" | {type:"function", name}.
void ReadToolChoice(FieldReader& r, ResponsesRequest* out) {
  const json* tc = r.Any("tool_choice");
  if (tc == nullptr) return;
  CompletionRequest& c = out->completion;
  if (tc->is_string()) {
    const std::string choice = tc->get<std::string>();
    if (choice == "none") {
      c.tool_choice = ToolChoice::kNone;
    } else if (choice == "auto") {
      c.tool_choice = ToolChoice::kAuto;
    } else if (choice == "required") {
      c.tool_choice = ToolChoice::kRequired;
    } else {
      return r.Fail("tool_choice", "'tool_choice' must be none, auto, required or {\"type\":\"function\",\"name\":...}");
    }
  } else if (tc->is_object()) {
    FieldReader t = r.Child(*tc, "tool_choice");
    std::string type;
    t.String("type", &type);
    if (t.ok() && type != "function") {
      return t.Fail("tool_choice.type", "'tool_choice.type' must be \"function\"");
    }
    RequireString(t, "name", &c.tool_choice_name);
    if (!t.ok()) return;
    c.tool_choice = ToolChoice::kFunction;
  } else {
    return r.Fail("tool_choice", "'tool_choice' must be a string or an object");
  }
  out->tool_choice = *tc;
}

// text.format: {type:"text"} | {type:"json_object"} | {type:"json_schema", name, schema, strict}.
void ReadTextFormat(FieldReader& r, ResponsesRequest* out) {
  const json* text = r.Object("text");
  if (text == nullptr) return;
  FieldReader t = r.Child(*text, "text");
  const json* format = t.Object("format");
  if (format == nullptr) return;
  FieldReader f = r.Child(*format, "text.format");
  std::string type;
  f.String("type", &type);
  CompletionRequest& c = out->completion;
  if (!f.ok()) return;
  if (type == "text") {
    c.response_format = ResponseFormat::kText;
  } else if (type == "json_object") {
    c.response_format = ResponseFormat::kJsonObject;
  } else if (type == "json_schema") {
    RequireString(f, "name", &c.json_schema_name);
    const json* schema = f.Object("schema");
    if (f.ok() && schema == nullptr) return f.Fail("text.format.schema", "'text.format.schema' is required");
    f.Bool("strict", &c.json_schema_strict);
    if (!f.ok()) return;
    c.response_format = ResponseFormat::kJsonSchema;
    c.json_schema = schema->dump();
  } else {
    return f.Fail("text.format.type", "'text.format.type' must be text, json_object or json_schema");
  }
  out->text_format = *format;
}

void ReadMetadata(FieldReader& r, ResponsesRequest* out) {
  const json* md = r.Object("metadata");
  if (md == nullptr) return;
  if (md->size() > kMaxMetadataPairs) {
    return r.Fail("metadata", "'metadata' holds at most " + std::to_string(kMaxMetadataPairs) + " pairs");
  }
  for (auto it = md->begin(); it != md->end(); ++it) {
    const std::string p = "metadata." + it.key().substr(0, 64);
    if (it.key().size() > kMaxMetadataKeyBytes) {
      return r.Fail(p, "metadata keys are at most " + std::to_string(kMaxMetadataKeyBytes) + " bytes");
    }
    if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxMetadataValueBytes) {
      return r.Fail(p, "'" + p + "' must be a string of at most " + std::to_string(kMaxMetadataValueBytes) + " bytes");
    }
  }
  out->metadata = *md;
}

}  // namespace

void NameToolResults(std::vector<ChatMessage>* messages) {
  for (size_t i = 0; i < messages->size(); ++i) {
    ChatMessage& m = (*messages)[i];
    if (m.role != "tool" || !m.name.empty()) continue;
    for (size_t j = i; j-- > 0 && m.name.empty();) {
      for (const ToolCall& c : (*messages)[j].tool_calls) {
        if (c.id == m.tool_call_id) m.name = c.name;
      }
    }
  }
}

ApiResult<ResponsesRequest> ParseResponsesRequest(const json& body) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  ResponsesRequest out;
  CompletionRequest& c = out.completion;
  c.kind = ApiKind::kChat;
  ReadCommonSampling(r, &c);  // model, temperature, top_p, top_k, min_p, seed, stream, cache_salt, ...
  r.OptionalInt("max_output_tokens", &c.max_tokens, 1, INT32_MAX);
  r.Bool("parallel_tool_calls", &c.parallel_tool_calls);
  r.Bool("store", &out.store);
  r.String("previous_response_id", &out.previous_response_id);
  r.String("user", &out.user);
  c.user = out.user;
  if (const json* instr = r.Any("instructions")) {
    if (instr->is_string()) {
      out.instructions = instr->get<std::string>();
    } else {
      r.Fail("instructions", "'instructions' must be a string");
    }
  }
  ReadInput(r, &c);
  NameToolResults(&c.messages);
  ReadTools(r, &out);
  ReadToolChoice(r, &out);
  if (c.tool_choice == ToolChoice::kNone) c.tools.clear();  // as the chat parser: no tools in the prompt
  ReadTextFormat(r, &out);
  ReadMetadata(r, &out);
  if (err) return *err;
  return out;
}

}  // namespace ember::server
