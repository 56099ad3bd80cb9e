// POST /v1/chat/completions, POST /v1/completions (GET /v1/models is in model_routes.cc).
#include <memory>

#include "server/completion_flow.h"
#include "server/llama_response.h"
#include "server/model_select.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace ember::server {
namespace {

using nlohmann::json;

struct StreamState {
  ServerContext* ctx;
  ModelLease model;  // keeps the model loaded until the response has ended
  std::shared_ptr<GenerationJob> job;
  CompletionRequest req;
  ResponseMeta meta;
  std::string route;
};

// Streams a chat completion: role chunk, content chunks (when tools were offered, text that may be a call
// is held and sent, as content or tool_calls, at the end), a finish chunk, an optional usage chunk, [DONE].
void StreamChat(StreamState& s, SseWriter& w) {
  const bool usage = s.req.include_usage;
  auto chunk = [&](json delta, const std::string& finish, const json& logprobs) {
    json c = ChatChunkJson(s.meta, std::move(delta), finish, logprobs);
    if (usage) c["usage"] = nullptr;
    return w.Data(c);
  };
  chunk({{"role", "assistant"}, {"content", ""}}, "", nullptr);
  TextSink sink = [&](const std::string& text, const std::vector<TokenEvent>& tokens) {
    return chunk({{"content", text}}, "", s.req.logprobs ? ChatLogprobs(tokens) : json(nullptr));
  };
  PumpResult r = PumpJob(*s.ctx, *s.job, s.req, sink, [&] { return w.Raw(": ping\n\n"); }, s.meta.id + "-call-");
  RecordGeneration(*s.ctx, s.route, r);
  if (r.client_gone) return;
  if (!r.status.ok()) {
    w.Data(ErrorBody(FromStatus(r.status), ApiFlavor::kOpenAI));
    w.Done();
    return;
  }
  // With tools, text that might have been a call was held back; what was not a call goes out now.
  if (!r.unsent_content.empty()) chunk({{"content", r.unsent_content}}, "", nullptr);
  if (!r.output.parsed.tool_calls.empty()) {
    chunk({{"tool_calls", OpenAIToolCalls(r.output.parsed.tool_calls, true)}}, "", nullptr);
  }
  // The finish chunk carries llama-server's `timings` (its clients read them there).
  json finish = ChatChunkJson(s.meta, json::object(), OpenAIFinishReason(r.output), nullptr);
  if (usage) finish["usage"] = nullptr;
  finish["timings"] = LlamaTimingsJson(r.output.result);
  w.Data(finish);
  if (usage) w.Data(UsageChunkJson(s.meta, "chat.completion.chunk", r.output.result));
  w.Done();
}

void StreamText(StreamState& s, SseWriter& w) {
  const bool usage = s.req.include_usage;
  auto chunk = [&](const std::string& text, const std::string& finish, const json& logprobs) {
    json c = TextChunkJson(s.meta, text, finish, logprobs);
    if (usage) c["usage"] = nullptr;
    return w.Data(c);
  };
  TextSink sink = [&](const std::string& text, const std::vector<TokenEvent>& tokens) {
    return chunk(text, "", s.req.logprobs ? CompletionLogprobs(tokens) : json(nullptr));
  };
  PumpResult r = PumpJob(*s.ctx, *s.job, s.req, sink, [&] { return w.Raw(": ping\n\n"); }, "");
  RecordGeneration(*s.ctx, s.route, r);
  if (r.client_gone) return;
  if (!r.status.ok()) {
    w.Data(ErrorBody(FromStatus(r.status), ApiFlavor::kOpenAI));
  } else {
    json finish = TextChunkJson(s.meta, "", OpenAIFinishReason(r.output), nullptr);
    if (usage) finish["usage"] = nullptr;
    finish["timings"] = LlamaTimingsJson(r.output.result);
    w.Data(finish);
    if (usage) w.Data(UsageChunkJson(s.meta, "text_completion", r.output.result));
  }
  w.Done();
}

std::optional<ApiError> HandleGeneration(ServerContext& ctx, const httplib::Request& http, httplib::Response& res,
                                         ApiKind kind) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<CompletionRequest> req =
      kind == ApiKind::kChat ? ParseOpenAIChatRequest(body.value()) : ParseOpenAICompletionRequest(body.value());
  if (!req.ok()) return req.error();
  // Dispatch let the key in; which key it was is the caller's prompt-cache tenant.
  const std::string key_id =
      ctx.access->KeyIdentity(http.get_header_value("Authorization"), http.get_header_value("x-api-key"));
  ApiResult<ModelLease> model = AcquireModel(ctx, req.value().model);
  if (!model.ok()) return model.error();
  ApiResult<std::shared_ptr<GenerationJob>> job = StartGeneration(ctx, model.value().model(), req.value(), key_id);
  if (!job.ok()) return job.error();
  const bool chat = kind == ApiKind::kChat;
  const std::string id = model.value().id();
  auto state = std::make_shared<StreamState>(StreamState{
      &ctx, std::move(model.value()), job.value(), std::move(req.value()),
      ResponseMeta{ctx.NewId(chat ? "chatcmpl-" : "cmpl-"), ctx.UnixSeconds(), id},
      chat ? "/v1/chat/completions" : "/v1/completions"});
  if (state->req.stream) {
    void (*stream)(StreamState&, SseWriter&) = chat ? &StreamChat : &StreamText;
    StartEventStream(res, [state, stream](SseWriter& w) { stream(*state, w); }, [state] { state->job->Cancel(); });
    return std::nullopt;
  }
  PumpResult r = PumpJob(ctx, *state->job, state->req, nullptr, nullptr, state->meta.id + "-call-");
  RecordGeneration(ctx, state->route, r);
  if (!r.status.ok()) return FromStatus(r.status);
  json reply = chat ? ChatCompletionJson(state->meta, r.output, state->req.logprobs)
                    : TextCompletionJson(state->meta, r.output, state->req.logprobs);
  reply["timings"] = LlamaTimingsJson(r.output.result);  // llama-server's extra field
  SetJson(res, reply);
  return std::nullopt;
}

}  // namespace

std::vector<Route> OpenAIRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  return {
      {"POST", "/v1/chat/completions", ApiFlavor::kOpenAI, true,
       [c](const httplib::Request& q, httplib::Response& s) { return HandleGeneration(*c, q, s, ApiKind::kChat); }},
      // llama-server's unversioned alias (its clients use both).
      {"POST", "/chat/completions", ApiFlavor::kOpenAI, true,
       [c](const httplib::Request& q, httplib::Response& s) { return HandleGeneration(*c, q, s, ApiKind::kChat); }},
      {"POST", "/v1/completions", ApiFlavor::kOpenAI, true,
       [c](const httplib::Request& q, httplib::Response& s) {
         return HandleGeneration(*c, q, s, ApiKind::kCompletion);
       }},
  };
}

}  // namespace ember::server
