// POST /v1/responses, GET /v1/responses/{id}, DELETE /v1/responses/{id} (OpenAI's Responses API).
//
// A request becomes a chat CompletionRequest: [instructions as a system turn] + the stored conversation of
// previous_response_id + this request's input items. It runs through StartGeneration / PumpJob like a chat
// completion, so the prompt cache serves the earlier turns (their prompt and reply are a prefix of this
// prompt, hence usage.input_tokens_details.cached_tokens). With store (the default) the response and its
// whole conversation go to the ResponseStore, under the caller's tenant.
#include <memory>

#include "cache/cache_namespace.h"
#include "server/completion_flow.h"
#include "server/model_select.h"
#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server/routes.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr const char* kRoute = "/v1/responses";

// Who may see a stored response: the API key's tenant (never the key itself; no salt: one key, one store).
std::string TenantOf(const ServerContext& ctx, const httplib::Request& http) {
  return CacheNamespace::TenantOf(
      ctx.access->KeyIdentity(http.get_header_value("Authorization"), http.get_header_value("x-api-key")), "");
}

ApiError ResponseNotFound(const std::string& id) {
  return {404, "invalid_request_error", "Response with id '" + id.substr(0, 100) + "' not found.", ""};
}

// StartGeneration names the chat route's fields; a Responses client sent max_output_tokens and input.
ApiError InResponsesTerms(ApiError e) {
  if (e.param == "max_tokens") {
    e.param = "max_output_tokens";
    for (size_t at = 0; (at = e.message.find("max_tokens", at)) != std::string::npos; at += 17) {
      e.message.replace(at, 10, "max_output_tokens");
    }
  } else if (e.param == "messages" || e.param == "prompt") {
    e.param = "input";
  }
  return e;
}

struct Turn {
  ServerContext* ctx;
  ModelLease model;  // keeps the model loaded until the response has ended
  std::shared_ptr<ResponseStore> store;
  std::shared_ptr<GenerationJob> job;
  ResponsesRequest req;
  ResponseEcho echo;
  std::string tenant;
  std::vector<ChatMessage> conversation;  // what a later previous_response_id continues (no instructions)
};

// The reply's items and the assistant turn the conversation keeps. Tool calls get OpenAI-style call ids.
struct Output {
  json items = json::array();
  std::string message_id;  // "" when the reply is only tool calls
  std::vector<std::string> call_item_ids;
  ChatMessage turn;
};

Output MakeOutput(CompletionOutput& out, const std::string& status, const std::string& message_id) {
  Output o;
  for (ToolCall& c : out.parsed.tool_calls) c.id = RandomId("call_");
  if (!out.parsed.content.empty() || out.parsed.tool_calls.empty()) {
    o.message_id = message_id.empty() ? RandomId("msg_") : message_id;
    o.items.push_back(MessageItem(o.message_id, out.parsed.content, status == "incomplete" ? "incomplete" : "completed"));
  }
  for (const ToolCall& c : out.parsed.tool_calls) {
    o.call_item_ids.push_back(RandomId("fc_"));
    o.items.push_back(FunctionCallItem(o.call_item_ids.back(), c, "completed"));
  }
  o.turn = ChatMessage{"assistant", out.parsed.content, out.parsed.tool_calls, "", ""};
  return o;
}

// Stores the finished response (store:true); a response the store cannot keep is still answered.
void Keep(Turn& t, const json& response, const ChatMessage& reply) {
  if (!t.req.store || t.store == nullptr) return;
  StoredResponse r;
  r.id = t.echo.id;
  r.tenant = t.tenant;
  r.response = response;
  // Kept: what a later turn continues (the conversation) and what GET shows. Tools offered under
  // tool_choice "none" never reached the prompt (openai_request.cc): not kept, so a client cannot fill
  // its share of the store with echoed bytes the model never saw.
  if (t.req.completion.tool_choice == ToolChoice::kNone) r.response["tools"] = json::array();
  r.conversation = t.conversation;
  r.conversation.push_back(reply);
  (void)t.store->Put(std::move(r));  // failures are logged by the store
}

void Stream(Turn& t, SseWriter& w) {
  ResponseEventWriter ev(w);
  const json start = ResponseJson(t.echo, "in_progress", json::array(), nullptr, nullptr);
  ev.Emit("response.created", {{"response", start}});
  ev.Emit("response.in_progress", {{"response", start}});
  const std::string msg_id = RandomId("msg_");
  bool open = false;
  auto open_message = [&] {
    if (open) return true;
    open = true;
    return ev.Emit("response.output_item.added", {{"output_index", 0}, {"item", MessageItem(msg_id, "", "in_progress")}}) &&
           ev.Emit("response.content_part.added",
                   {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0},
                    {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}}}});
  };
  auto delta = [&](const std::string& text) {
    return open_message() && ev.Emit("response.output_text.delta", {{"item_id", msg_id}, {"output_index", 0},
                                                                     {"content_index", 0}, {"delta", text},
                                                                     {"logprobs", json::array()}});
  };
  TextSink sink = [&](const std::string& text, const std::vector<TokenEvent>&) { return delta(text); };
  PumpResult r = PumpJob(*t.ctx, *t.job, t.req.completion, sink, [&] { return w.Raw(": ping\n\n"); }, "call_");
  RecordGeneration(*t.ctx, kRoute, r);
  if (r.client_gone) return;
  if (!r.status.ok()) {
    const ApiError err = FromStatus(r.status);
    ev.Emit("error", {{"code", "server_error"}, {"message", err.message}, {"param", nullptr}});
    ev.Emit("response.failed", {{"response", ResponseJson(t.echo, "failed", json::array(), nullptr,
                                                          {{"code", "server_error"}, {"message", err.message}})}});
    return;
  }
  if (!r.unsent_content.empty()) delta(r.unsent_content);
  const std::string status = ResponseStatusOf(r.output);
  Output o = MakeOutput(r.output, status, msg_id);  // the message item keeps the id its deltas named
  size_t index = 0;
  if (!o.message_id.empty()) {
    open_message();
    const json part = o.items[0]["content"][0];
    ev.Emit("response.output_text.done", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0},
                                          {"text", r.output.parsed.content}, {"logprobs", json::array()}});
    ev.Emit("response.content_part.done", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
    ev.Emit("response.output_item.done", {{"output_index", 0}, {"item", o.items[0]}});
    index = 1;
  }
  for (size_t i = 0; i < r.output.parsed.tool_calls.size(); ++i, ++index) {
    const ToolCall& c = r.output.parsed.tool_calls[i];
    const std::string& id = o.call_item_ids[i];
    ev.Emit("response.output_item.added",
            {{"output_index", index}, {"item", FunctionCallItem(id, ToolCall{c.id, c.name, ""}, "in_progress")}});
    ev.Emit("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", index}, {"delta", c.arguments_json}});
    ev.Emit("response.function_call_arguments.done",
            {{"item_id", id}, {"output_index", index}, {"name", c.name}, {"arguments", c.arguments_json}});
    ev.Emit("response.output_item.done", {{"output_index", index}, {"item", o.items[index]}});
  }
  const json final = ResponseJson(t.echo, status, o.items, &r.output.result, nullptr);
  Keep(t, final, o.turn);  // before the last event: a client that GETs it right after finds it
  ev.Emit(status == "incomplete" ? "response.incomplete" : "response.completed", {{"response", final}});
}

std::optional<ApiError> HandleCreate(ServerContext& ctx, const std::shared_ptr<ResponseStore>& store,
                                     const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<ResponsesRequest> parsed = ParseResponsesRequest(body.value());
  if (!parsed.ok()) return parsed.error();
  auto t = std::make_shared<Turn>();
  t->ctx = &ctx;
  t->store = store;
  t->req = std::move(parsed.value());
  t->tenant = TenantOf(ctx, http);
  if (!t->req.previous_response_id.empty()) {
    // OpenAI answers an unknown (or another key's) previous response with this 400.
    std::optional<StoredResponse> prev = store->Get(t->req.previous_response_id, t->tenant);
    if (!prev) {
      // Rendered here for its `code`, which clients (Codex) read to fall back to sending the whole history.
      json e = ErrorBody(InvalidRequest("Previous response with id '" + t->req.previous_response_id.substr(0, 100) +
                                            "' not found.",
                                        "previous_response_id"),
                         ApiFlavor::kOpenAI);
      e["error"]["code"] = "previous_response_not_found";
      SetJson(res, e, 400);
      return std::nullopt;
    }
    t->conversation = std::move(prev->conversation);
  }
  CompletionRequest& c = t->req.completion;
  t->conversation.insert(t->conversation.end(), c.messages.begin(), c.messages.end());
  NameToolResults(&t->conversation);  // a result may answer a call of a stored turn
  // The previous response's instructions are not carried over (OpenAI documents this): only this request's.
  c.messages.clear();
  if (t->req.instructions) c.messages.push_back(ChatMessage{"system", *t->req.instructions, {}, "", ""});
  c.messages.insert(c.messages.end(), t->conversation.begin(), t->conversation.end());
  ApiResult<ModelLease> model = AcquireModel(ctx, c.model);
  if (!model.ok()) return model.error();
  t->model = std::move(model.value());
  ApiResult<std::shared_ptr<GenerationJob>> job =
      StartGeneration(ctx, t->model.model(), c,
                      ctx.access->KeyIdentity(http.get_header_value("Authorization"), http.get_header_value("x-api-key")));
  if (!job.ok()) return InResponsesTerms(job.error());
  t->job = job.value();
  t->echo = EchoOf(t->req, RandomId("resp_"), ctx.UnixSeconds(), t->model.id());
  if (c.stream) {
    StartEventStream(res, [t](SseWriter& w) { Stream(*t, w); }, [t] { t->job->Cancel(); });
    return std::nullopt;
  }
  PumpResult r = PumpJob(ctx, *t->job, c, nullptr, nullptr, "call_");
  RecordGeneration(ctx, kRoute, r);
  if (!r.status.ok()) return FromStatus(r.status);
  const std::string status = ResponseStatusOf(r.output);
  Output o = MakeOutput(r.output, status, "");
  const json response = ResponseJson(t->echo, status, o.items, &r.output.result, nullptr);
  Keep(*t, response, o.turn);
  SetJson(res, response);
  return std::nullopt;
}

std::string IdOf(const httplib::Request& http) { return http.path.substr(std::string(kRoute).size() + 1); }

}  // namespace

std::vector<Route> ResponsesRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  ResponseStoreOptions so;
  so.env = ctx.env;
  so.root = ctx.options.ssd_cache_dir;
  so.max_bytes = ctx.options.responses_store_bytes;
  so.ttl_s = ctx.options.responses_ttl_s;
  for (const std::string& id : ctx.access->key_ids()) so.tenants.push_back(CacheNamespace::TenantOf(id, ""));
  auto store = std::make_shared<ResponseStore>(std::move(so));
  Route get{"GET", std::string(kRoute) + "/", ApiFlavor::kOpenAI, true,
            [c, store](const httplib::Request& q, httplib::Response& s) -> std::optional<ApiError> {
              std::optional<StoredResponse> r = store->Get(IdOf(q), TenantOf(*c, q));
              if (!r) return ResponseNotFound(IdOf(q));
              SetJson(s, r->response);
              return std::nullopt;
            }};
  get.prefix = true;
  Route del{"DELETE", std::string(kRoute) + "/", ApiFlavor::kOpenAI, true,
            [c, store](const httplib::Request& q, httplib::Response& s) -> std::optional<ApiError> {
              if (!store->Delete(IdOf(q), TenantOf(*c, q))) return ResponseNotFound(IdOf(q));
              SetJson(s, {{"id", IdOf(q)}, {"object", "response"}, {"deleted", true}});
              return std::nullopt;
            }};
  del.prefix = true;
  return {
      {"POST", kRoute, ApiFlavor::kOpenAI, true,
       [c, store](const httplib::Request& q, httplib::Response& s) { return HandleCreate(*c, store, q, s); }},
      std::move(get),
      std::move(del),
  };
}

}  // namespace ember::server
