// Parsing of OpenAI chat/completions request bodies into CompletionRequest.
#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

std::string Index(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

// Content is a string or an array of parts; text parts are concatenated (the model sees one string).
std::string ReadContent(const json& content, const std::string& path, FieldReader& r) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    r.Fail(path, "'" + path + "' must be a string or an array of content parts");
    return "";
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = Index(path, i);
    if (part.is_string()) {
      text += part.get<std::string>();
      continue;
    }
    if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) {
      r.Fail(p, "'" + p + "' must be a text part {\"type\":\"text\",\"text\":...}; only text is supported");
      return "";
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

void ReadToolCalls(const json& calls, const std::string& path, FieldReader& r, ChatMessage* m) {
  for (size_t i = 0; i < calls.size() && r.ok(); ++i) {
    const std::string p = Index(path, i);
    std::optional<ApiError> err;
    FieldReader call(calls[i], p + ".", &err);
    ToolCall tc;
    call.String("id", &tc.id);
    const json* fn = call.Object("function");
    if (fn != nullptr) {
      FieldReader f(*fn, p + ".function.", &err);
      f.String("name", &tc.name);
      const json* args = f.Any("arguments");
      // Spec says a JSON string; some clients send the object itself.
      if (args != nullptr) tc.arguments_json = args->is_string() ? args->get<std::string>() : args->dump();
    }
    if (!calls[i].is_object() || fn == nullptr) err = InvalidRequest("'" + p + "' must be a tool call object", p);
    if (err) return r.Fail(err->param, err->message);
    m->tool_calls.push_back(std::move(tc));
  }
}

ChatMessage ReadMessage(const json& msg, size_t i, FieldReader& r) {
  const std::string path = Index("messages", i);
  ChatMessage m;
  if (!msg.is_object()) {
    r.Fail(path, "'" + path + "' must be an object");
    return m;
  }
  std::optional<ApiError> err;
  FieldReader f(msg, path + ".", &err);
  f.String("role", &m.role);
  if (m.role == "developer") m.role = "system";  // newer OpenAI name for the same thing
  if (!err && m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
    f.Fail(path + ".role", "'" + path + ".role' must be system, user, assistant or tool");
  }
  if (err) {
    r.Fail(err->param, err->message);
    return m;
  }
  if (msg.contains("content")) m.content = ReadContent(msg["content"], path + ".content", r);
  f.String("name", &m.name);
  f.String("tool_call_id", &m.tool_call_id);
  if (const json* calls = f.Array("tool_calls")) ReadToolCalls(*calls, path + ".tool_calls", f, &m);
  if (err) r.Fail(err->param, err->message);
  return m;
}

void ReadTools(FieldReader& r, CompletionRequest* out) {
  const json* tools = r.Array("tools");
  std::string choice = "auto";
  if (const json* tc = r.Any("tool_choice"); tc != nullptr && tc->is_string()) choice = tc->get<std::string>();
  if (tools == nullptr || choice == "none") return;
  for (size_t i = 0; i < tools->size() && r.ok(); ++i) {
    const std::string p = Index("tools", i);
    std::optional<ApiError> err;
    FieldReader t((*tools)[i], p + ".", &err);
    const json* fn = t.Object("function");
    if (fn == nullptr) t.Fail(p + ".function", "'" + p + ".function' is required");
    ToolSpec spec;
    if (fn != nullptr) {
      FieldReader f(*fn, p + ".function.", &err);
      f.String("name", &spec.name);
      f.String("description", &spec.description);
      const json* params = f.Object("parameters");
      spec.parameters_json = params == nullptr ? "{}" : params->dump();
      if (spec.name.empty()) f.Fail(p + ".function.name", "'" + p + ".function.name' is required");
    }
    if (err) return r.Fail(err->param, err->message);
    out->tools.push_back(std::move(spec));
  }
}

void ReadTemplateKwargs(FieldReader& r, CompletionRequest* out) {
  if (const json* kw = r.Object("chat_template_kwargs")) {
    for (auto it = kw->begin(); it != kw->end(); ++it) out->template_kwargs.emplace_back(it.key(), it->dump());
  }
}

void ReadLogitBias(FieldReader& r, CompletionRequest* out) {
  const json* bias = r.Object("logit_bias");
  if (bias == nullptr) return;
  for (auto it = bias->begin(); it != bias->end(); ++it) {
    const std::string p = "logit_bias." + it.key();
    char* end = nullptr;
    const long id = std::strtol(it.key().c_str(), &end, 10);
    if (it.key().empty() || *end != '\0' || id < 0) return r.Fail(p, "'" + p + "': logit_bias keys must be token ids");
    if (!it->is_number() || it->get<double>() < -100 || it->get<double>() > 100) {
      return r.Fail(p, "'" + p + "' must be a number between -100 and 100");
    }
    out->sampling.logit_bias.emplace_back(static_cast<int32_t>(id), it->get<float>());
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
  r.StringOrList("stop", &out->stop, 16);
  r.String("user", &out->user);
  int32_t n = 1;
  r.Int("n", &n, 1, 1);  // one choice per request: ask again for more
  r.OptionalInt("max_tokens", &out->max_tokens, 1, INT32_MAX);
  if (const json* so = r.Object("stream_options")) {
    std::optional<ApiError> err;
    FieldReader s(*so, "stream_options.", &err);
    s.Bool("include_usage", &out->include_usage);
    if (err) r.Fail(err->param, err->message);
  }
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
  if (prompt != nullptr && prompt->is_string()) {
    out.prompt_text = prompt->get<std::string>();
  } else if (prompt != nullptr && prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    out.prompt_text = (*prompt)[0].get<std::string>();
  } else if (prompt != nullptr && prompt->is_array() && !prompt->empty() &&
             std::all_of(prompt->begin(), prompt->end(), [](const json& t) { return t.is_number_integer(); })) {
    out.prompt_is_ids = true;
    for (const json& t : *prompt) out.prompt_ids.push_back(t.get<int32_t>());
  } else if (prompt != nullptr) {
    r.Fail("prompt", "'prompt' must be a string, an array of one string, or an array of token ids");
  }
  return Finish(std::move(out), err);
}

}  // namespace ember::server
