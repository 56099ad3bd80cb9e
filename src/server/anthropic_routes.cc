// POST /v1/messages (Anthropic Messages, streaming and not) and POST /v1/messages/count_tokens.
#include <memory>

#include "server/anthropic_response.h"
#include "server/completion_flow.h"
#include "server/model_select.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr const char* kRoute = "/v1/messages";

struct MessageStream {
  ServerContext* ctx;
  ModelLease model;  // keeps the model loaded until the response has ended
  std::shared_ptr<GenerationJob> job;
  CompletionRequest req;
  ResponseMeta meta;
};

bool SendEvent(SseWriter& w, const json& payload) { return w.Event(payload["type"].get<std::string>(), payload); }

// Text streams into block 0. With tools, block 0 opens only once there is text (a pure tool call has
// none), and the tool_use blocks follow it at the end, when the held-back text has been parsed.
void StreamMessage(MessageStream& s, SseWriter& w) {
  bool text_open = false;
  auto open_text = [&] {
    if (!text_open) SendEvent(w, TextBlockStartEvent(0));
    text_open = true;
  };
  SendEvent(w, MessageStartEvent(s.meta, static_cast<int32_t>(s.job->request().prompt.size())));
  if (s.req.tools.empty()) open_text();
  SendEvent(w, PingEvent());
  TextSink sink = [&](const std::string& text, const std::vector<TokenEvent>&) {
    open_text();
    return SendEvent(w, TextDeltaEvent(0, text));
  };
  PumpResult r = PumpJob(*s.ctx, *s.job, s.req, sink, [&] { return SendEvent(w, PingEvent()); },
                         "toolu_" + s.meta.id + "_");
  RecordGeneration(*s.ctx, kRoute, r);
  if (r.client_gone) return;
  if (!r.status.ok()) {
    w.Event("error", ErrorBody(FromStatus(r.status), ApiFlavor::kAnthropic));
    return;
  }
  if (!r.unsent_content.empty()) {
    open_text();
    SendEvent(w, TextDeltaEvent(0, r.unsent_content));
  }
  if (text_open) SendEvent(w, BlockStopEvent(0));
  int index = text_open ? 1 : 0;
  for (const ToolCall& call : r.output.parsed.tool_calls) {
    SendEvent(w, ToolUseBlockStartEvent(index, call));
    SendEvent(w, InputJsonDeltaEvent(index, DumpJson(ToolInput(call.arguments_json))));
    SendEvent(w, BlockStopEvent(index++));
  }
  SendEvent(w, MessageDeltaEvent(r.output));
  SendEvent(w, MessageStopEvent());
}

std::optional<ApiError> HandleMessages(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<CompletionRequest> req = ParseAnthropicRequest(body.value(), /*require_max_tokens=*/true);
  if (!req.ok()) return req.error();
  // Dispatch let the key in; which key it was is the caller's prompt-cache tenant.
  const std::string key_id =
      ctx.access->KeyIdentity(http.get_header_value("Authorization"), http.get_header_value("x-api-key"));
  ApiResult<ModelLease> model = AcquireModel(ctx, req.value().model);
  if (!model.ok()) return model.error();
  ApiResult<std::shared_ptr<GenerationJob>> job = StartGeneration(ctx, model.value().model(), req.value(), key_id);
  if (!job.ok()) return job.error();
  const std::string id = model.value().id();
  auto state = std::make_shared<MessageStream>(MessageStream{&ctx, std::move(model.value()), job.value(),
                                                             std::move(req.value()),
                                                             ResponseMeta{ctx.NewId("msg_"), ctx.UnixSeconds(), id}});
  if (state->req.stream) {
    StartEventStream(res, [state](SseWriter& w) { StreamMessage(*state, w); }, [state] { state->job->Cancel(); });
    return std::nullopt;
  }
  PumpResult r = PumpJob(ctx, *state->job, state->req, nullptr, nullptr, "toolu_" + state->meta.id + "_");
  RecordGeneration(ctx, kRoute, r);
  if (!r.status.ok()) return FromStatus(r.status);
  SetJson(res, AnthropicMessageJson(state->meta, r.output));
  return std::nullopt;
}

std::optional<ApiError> HandleCountTokens(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<CompletionRequest> req = ParseAnthropicRequest(body.value(), /*require_max_tokens=*/false);
  if (!req.ok()) return req.error();
  ApiResult<ModelLease> model = AcquireModel(ctx, req.value().model);
  if (!model.ok()) return model.error();
  ApiResult<std::vector<int32_t>> ids = PromptTokens(ctx, model.value().model(), req.value());
  if (!ids.ok()) return ids.error();
  SetJson(res, {{"input_tokens", ids.value().size()}});
  return std::nullopt;
}

}  // namespace

std::vector<Route> AnthropicRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  return {
      {"POST", "/v1/messages", ApiFlavor::kAnthropic, true,
       [c](const httplib::Request& q, httplib::Response& s) { return HandleMessages(*c, q, s); }},
      {"POST", "/v1/messages/count_tokens", ApiFlavor::kAnthropic, true,
       [c](const httplib::Request& q, httplib::Response& s) { return HandleCountTokens(*c, q, s); }},
  };
}

}  // namespace ember::server
