// Parsing of OpenAI chat/completions request bodies into CompletionRequest. Every read goes through
// FieldReader, so a wrong type anywhere is a 400 naming the field.
#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/json_input.h"
#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

// Content is a string or an array of parts; text parts are concatenated (the model sees one string).
std::string ReadContent(const json& content, const std::string& path, FieldReader& r) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    r.Fail(path, "'" + path + "' must be a string or an array of content parts");
    return "";
  }
  std::string text;
  for (size_t i = 0; i < content.size() && r.ok(); ++i) {
    const json& part = content[i];
    const std::string p = IndexPath(path, i);
    if (part.is_string()) {
      text += part.get<std::string>();
      continue;
    }
    FieldReader f = r.Child(part, p);
    std::string type = "text", piece;
    f.String("type", &type);
    if (f.ok() && type != "text") {
      f.Fail(p, "'" + p + "' must be a text part {\"type\":\"text\",\"text\":...}; only text is supported");
    }
    if (f.ok() && f.Any("text") == nullptr) f.Fail(p + ".text", "'" + p + ".text' is required");
    f.String("text", &piece);
    text += piece;
  }
  return text;
}

void ReadToolCalls(const json& calls, const std::string& path, FieldReader& r, ChatMessage* m) {
  for (size_t i = 0; i < calls.size() && r.ok(); ++i) {
    const std::string p = IndexPath(path, i);
    FieldReader call = r.Child(calls[i], p);
    ToolCall tc;
    std::string type = "function";
    call.String("id", &tc.id);
    call.String("type", &type);
    if (call.ok() && type != "function") call.Fail(p + ".type", "'" + p + ".type' must be \"function\"");
    const json* fn = call.Object("function");
    if (call.ok() && fn == nullptr) call.Fail(p + ".function", "'" + p + ".function' is required");
    if (fn != nullptr) {
      FieldReader f = r.Child(*fn, p + ".function");
      f.String("name", &tc.name);
      ReadArgumentsText(f, false, &tc.arguments_json);
    }
    m->tool_calls.push_back(std::move(tc));
  }
}

ChatMessage ReadMessage(const json& msg, size_t i, FieldReader& r) {
  const std::string path = IndexPath("messages", i);
  ChatMessage m;
  FieldReader f = r.Child(msg, path);
  f.String("role", &m.role);
  if (m.role == "developer") m.role = "system";  // newer OpenAI name for the same thing
  if (f.ok() && m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
    f.Fail(path + ".role", "'" + path + ".role' must be system, user, assistant or tool");
  }
  if (const json* content = f.Any("content")) m.content = ReadContent(*content, path + ".content", f);
  f.String("name", &m.name);
  f.String("tool_call_id", &m.tool_call_id);
  f.String("reasoning_content", &m.reasoning_content);  // llama-server's name for an earlier turn's reasoning
  if (const json* calls = f.Array("tool_calls")) ReadToolCalls(*calls, path + ".tool_calls", f, &m);
  return m;
}

// "none", "auto", "required" or {"type":"function","function":{"name":...}}. "required" and a named
// function force a call (tool_grammar.h); "none" offers no tools to the template at all.
void ReadToolChoice(FieldReader& r, CompletionRequest* out) {
  const json* tc = r.Any("tool_choice");
  if (tc == nullptr) return;
  if (tc->is_string()) {
    const std::string& choice = tc->get_ref<const std::string&>();
    if (choice == "none") {
      out->tool_choice = ToolChoice::kNone;
    } else if (choice == "required") {
      out->tool_choice = ToolChoice::kRequired;
    } else if (choice != "auto") {
      r.Fail("tool_choice", "'tool_choice' must be none, auto, required or an object naming a function");
    }
  } else if (tc->is_object()) {
    FieldReader t = r.Child(*tc, "tool_choice");
    std::string type = "function";
    t.String("type", &type);
    if (t.ok() && type != "function") {
      return t.Fail("tool_choice.type", "'tool_choice.type' must be \"function\"");
    }
    const json* fn = t.Object("function");
    if (t.ok() && fn == nullptr) return t.Fail("tool_choice.function", "'tool_choice.function' is required");
    if (fn == nullptr) return;
    FieldReader f = r.Child(*fn, "tool_choice.function");
    f.String("name", &out->tool_choice_name);
    if (f.ok() && out->tool_choice_name.empty()) {
      return f.Fail("tool_choice.function.name", "'tool_choice.function.name' is required");
    }
    out->tool_choice = ToolChoice::kFunction;
  } else {
    r.Fail("tool_choice", "'tool_choice' must be a string or an object");
  }
}

void ReadTools(FieldReader& r, CompletionRequest* out) {
  const json* tools = r.Array("tools");
  ReadToolChoice(r, out);
  r.Bool("parallel_tool_calls", &out->parallel_tool_calls);
  for (size_t i = 0; tools != nullptr && i < tools->size() && r.ok(); ++i) {
    const std::string p = IndexPath("tools", i);
    FieldReader t = r.Child((*tools)[i], p);
    std::string type = "function";
    t.String("type", &type);
    if (t.ok() && type != "function") t.Fail(p + ".type", "'" + p + ".type' must be \"function\"");
    const json* fn = t.Object("function");
    if (t.ok() && fn == nullptr) t.Fail(p + ".function", "'" + p + ".function' is required");
    if (fn == nullptr) continue;
    ToolSpec spec;
    FieldReader f = r.Child(*fn, p + ".function");
    f.String("name", &spec.name);
    f.String("description", &spec.description);
    const json* params = f.Object("parameters");
    spec.parameters_json = params == nullptr ? "{}" : params->dump();
    if (f.ok() && spec.name.empty()) f.Fail(p + ".function.name", "'" + p + ".function.name' is required");
    out->tools.push_back(std::move(spec));
  }
  FinishToolChoice(r, out);
}

// response_format: {"type":"text"} | {"type":"json_object"} | {"type":"json_schema","json_schema":{"name",
// "schema","strict","description"}}; llama-server's {"type":"json_object","schema":{...}} is a schema too.
// output_constraint.cc compiles it; a json_schema without a schema is any JSON object.
void ReadResponseFormat(FieldReader& r, CompletionRequest* out) {
  const json* rf = r.Object("response_format");
  if (rf == nullptr) return;
  FieldReader f = r.Child(*rf, "response_format");
  std::string type;
  f.String("type", &type);
  if (!f.ok()) return;
  auto take_schema = [&](const json& schema, const std::string& path) {
    if (!schema.is_object() && !schema.is_boolean()) {
      return f.Fail(path, "'" + path + "' must be a JSON Schema (an object or a boolean)");
    }
    out->response_format = ResponseFormat::kJsonSchema;
    out->json_schema = schema.dump();
  };
  if (type == "text") return;
  if (type == "json_object") {
    out->response_format = ResponseFormat::kJsonObject;
    if (const json* schema = f.Any("schema")) take_schema(*schema, "response_format.schema");
    return;
  }
  if (type == "json_schema") {
    const json* js = f.Object("json_schema");
    if (!f.ok()) return;
    if (js == nullptr) {
      return f.Fail("response_format.json_schema",
                    "'response_format.json_schema' is required when 'response_format.type' is \"json_schema\"");
    }
    FieldReader j = f.Child(*js, "response_format.json_schema");
    std::string description;
    j.String("name", &out->json_schema_name);
    j.String("description", &description);
    j.Bool("strict", &out->json_schema_strict);
    if (!j.ok()) return;
    out->response_format = ResponseFormat::kJsonObject;
    if (const json* schema = j.Any("schema")) take_schema(*schema, "response_format.json_schema.schema");
    return;
  }
  f.Fail("response_format.type", type.empty() ? "'response_format.type' is required"
                                               : "'response_format.type' must be text, json_object or json_schema");
}

void ReadTemplateKwargs(FieldReader& r, CompletionRequest* out) {
  // Values are re-parsed by the backend; the body's depth limit already bounds them.
  if (const json* kw = r.Object("chat_template_kwargs")) {
    for (auto it = kw->begin(); it != kw->end(); ++it) out->template_kwargs.emplace_back(it.key(), it->dump());
  }
}

void ReadLogitBias(FieldReader& r, CompletionRequest* out) {
  const json* bias = r.Object("logit_bias");
  if (bias == nullptr) return;
  for (auto it = bias->begin(); it != bias->end() && r.ok(); ++it) {
    const std::string p = "logit_bias." + it.key();
    const std::string& key = it.key();
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : -1;  // ten digits cannot overflow int64
    if (id < 0 || id > INT32_MAX) return r.Fail(p, "'" + p + "': logit_bias keys must be token ids");
    // Ids beyond the vocabulary are ignored by the sampler (they have no logit to bias).
    float value = 0;
    r.Child(*bias, "logit_bias").Float(it.key().c_str(), &value, -100, 100);
    out->sampling.logit_bias.emplace_back(static_cast<int32_t>(id), value);
  }
}

ApiResult<CompletionRequest> Finish(CompletionRequest req, const std::optional<ApiError>& err) {
  if (err) return *err;
  return req;
}

void ReadOpenAICommon(FieldReader& r, CompletionRequest* out) {
  ReadCommonSampling(r, out);
  r.Float("presence_penalty", &out->sampling.presence_penalty, -2, 2);
  r.Float("frequency_penalty", &out->sampling.frequency_penalty, -2, 2);
  ReadLogitBias(r, out);
  r.StringOrList("stop", &out->stop, kMaxStopStrings, kMaxStopBytes);
  r.String("user", &out->user);
  r.String("grammar", &out->grammar);  // llama-server's GBNF field; compiled (and refused) by BuildOutputGrammar
  int32_t n = 1;
  r.Int("n", &n, 1, 1);  // one choice per request: ask again for more
  r.OptionalInt("max_tokens", &out->max_tokens, 1, INT32_MAX);
  if (const json* so = r.Object("stream_options")) r.Child(*so, "stream_options").Bool("include_usage", &out->include_usage);
  ReadResponseFormat(r, out);
}

}  // namespace

void ReadCommonSampling(FieldReader& r, CompletionRequest* out) {
  r.String("model", &out->model);
  r.Float("temperature", &out->sampling.temperature, 0, 2);
  r.Float("top_p", &out->sampling.top_p, 0, 1);
  r.Int("top_k", &out->sampling.top_k, 0, 1 << 20);
  r.Float("min_p", &out->sampling.min_p, 0, 1);
  r.Seed("seed", &out->sampling.seed);
  r.Float("repetition_penalty", &out->sampling.repetition_penalty, 0.01, 10);
  r.Bool("stream", &out->stream);
  r.String("cache_salt", &out->cache_salt);
}

void FinishToolChoice(FieldReader& r, CompletionRequest* out) {
  if (!r.ok()) return;
  if (out->tool_choice == ToolChoice::kRequired && out->tools.empty()) {
    return r.Fail("tool_choice", "'tool_choice' forces a tool call but no tools were given");
  }
  if (out->tool_choice == ToolChoice::kFunction) {
    const bool offered = std::any_of(out->tools.begin(), out->tools.end(),
                                     [&](const ToolSpec& t) { return t.name == out->tool_choice_name; });
    if (!offered) {
      return r.Fail("tool_choice", "'tool_choice' names the tool '" + out->tool_choice_name +
                                       "', which is not among the tools");
    }
  }
  if (out->tool_choice == ToolChoice::kNone) out->tools.clear();  // the template sees no tools at all
}

ApiResult<CompletionRequest> ParseOpenAIChatRequest(const json& body) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  CompletionRequest out;
  out.kind = ApiKind::kChat;
  ReadOpenAICommon(r, &out);
  r.OptionalInt("max_completion_tokens", &out.max_tokens, 1, INT32_MAX);
  r.Bool("logprobs", &out.logprobs);
  r.Int("top_logprobs", &out.top_logprobs, 0, 20);
  const json* messages = r.Array("messages");
  if (r.ok() && (messages == nullptr || messages->empty())) {
    r.Fail("messages", "'messages' is required and must be a non-empty array");
  }
  for (size_t i = 0; messages != nullptr && i < messages->size() && r.ok(); ++i) {
    out.messages.push_back(ReadMessage((*messages)[i], i, r));
  }
  ReadTools(r, &out);
  ReadTemplateKwargs(r, &out);
  return Finish(std::move(out), err);
}

ApiResult<CompletionRequest> ParseOpenAICompletionRequest(const json& body) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  CompletionRequest out;
  out.kind = ApiKind::kCompletion;
  ReadOpenAICommon(r, &out);
  // Legacy completions: `logprobs` is the number of alternatives (0..5), not a boolean.
  std::optional<int32_t> lp;
  r.OptionalInt("logprobs", &lp, 0, 5);
  if (lp) out.logprobs = true, out.top_logprobs = *lp;
  const json* prompt = r.Any("prompt");
  if (prompt == nullptr && r.ok()) r.Fail("prompt", "'prompt' is required");
  auto is_id = [](const json& t) {
    // Token ids are int32; the backend refuses ids beyond the vocabulary.
    return t.is_number_unsigned() ? t.get<uint64_t>() <= INT32_MAX
                                  : t.is_number_integer() && t.get<int64_t>() >= 0 && t.get<int64_t>() <= INT32_MAX;
  };
  if (prompt != nullptr && prompt->is_string()) {
    out.prompt_text = prompt->get<std::string>();
  } else if (prompt != nullptr && prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    out.prompt_text = (*prompt)[0].get<std::string>();
  } else if (prompt != nullptr && prompt->is_array() && !prompt->empty() && std::all_of(prompt->begin(), prompt->end(), is_id)) {
    out.prompt_is_ids = true;
    for (const json& t : *prompt) out.prompt_ids.push_back(t.get<int32_t>());
  } else if (prompt != nullptr) {
    r.Fail("prompt", "'prompt' must be a string, an array of one string, or an array of token ids (0 to 2^31-1)");
  }
  return Finish(std::move(out), err);
}

}  // namespace ember::server
