// llama-server's native routes (docs/llama-server-compat.md): POST /completion (and /completions),
// /tokenize, /detokenize, /apply-template, GET /props, /slots, /v1/health (GET /models is in
// model_routes.cc). They run on the same StartGeneration / PumpJob path as the OpenAI and Anthropic
// routes; only the wire shapes differ. With several models, a body's `model` (or GET's ?model=) picks one.
#include <memory>

#include "server/bounded_reply.h"
#include "server/completion_flow.h"
#include "server/llama_request.h"
#include "server/llama_response.h"
#include "server/memory_return.h"
#include "server/model_select.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr const char* kRoute = "/completion";

LlamaDefaults DefaultsOf(const ServerContext& ctx, const ServedModel& model) {
  LlamaDefaults d;
  d.n_predict = ctx.options.n_predict;
  d.temperature = ctx.options.default_temperature;
  d.seed = ctx.options.default_seed;
  d.parallel = std::max(1, static_cast<int>(model.scheduler->stats().lanes));
  return d;
}

// The model a body's `model` field names, leased.
ApiResult<ModelLease> ModelOfBody(ServerContext& ctx, const json& body) {
  ApiResult<std::string> name = ModelField(body);
  if (!name.ok()) return name.error();
  return AcquireModel(ctx, name.value());
}

// The prompt as token ids. Text pieces are tokenized like a raw /v1/completions prompt; the BOS goes in
// front only when the prompt starts with text (llama-server's rule), never before a piece in the middle.
ApiResult<std::vector<int32_t>> ResolvePrompt(ServerContext& ctx, const ServedModel& model,
                                              const std::vector<PromptPiece>& pieces) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].is_text) {
      ids.push_back(pieces[i].id);
      continue;
    }
    StatusOr<std::vector<int32_t>> t =
        model.backend->Tokenize(pieces[i].text, /*add_special=*/i == 0, ctx.options.completion_prompt_specials);
    if (!t.ok()) return FromStatus(t.status());
    ids.insert(ids.end(), t->begin(), t->end());
  }
  return ids;
}

struct CompletionStream {
  ServerContext* ctx;
  ModelLease model;  // keeps the model loaded until the response has ended
  std::shared_ptr<GenerationJob> job;
  LlamaCompletion c;
  LlamaReplyInfo info;
};

void StreamCompletion(CompletionStream& s, SseWriter& w) {
  const int32_t evaluated = static_cast<int32_t>(s.job->request().prompt.size());
  int32_t predicted = 0;
  TextSink sink = [&](const std::string& text, const std::vector<TokenEvent>& tokens) {
    predicted += static_cast<int32_t>(tokens.size());
    if (s.c.n_predict == 0) return true;  // prompt-only: nothing to show
    return w.Data(LlamaChunkJson(s.c, text, tokens, predicted, evaluated));
  };
  PumpResult r = PumpJob(*s.ctx, *s.job, s.c.req, sink, [&] { return w.Raw(": ping\n\n"); }, "");
  RecordGeneration(*s.ctx, kRoute, r);
  if (r.client_gone) return;
  if (!r.status.ok()) {
    w.Data(ErrorBody(FromStatus(r.status), ApiFlavor::kOpenAI));
    return;
  }
  w.Data(LlamaCompletionJson(s.c, r.output, s.info, /*streamed=*/true));
}

std::optional<ApiError> HandleCompletion(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  // The model first: the body's id_slot is checked against its lanes.
  ApiResult<ModelLease> lease = ModelOfBody(ctx, body.value());
  if (!lease.ok()) return lease.error();
  const ServedModel& model = lease.value().model();
  ApiResult<LlamaCompletion> parsed = ParseLlamaCompletion(body.value(), DefaultsOf(ctx, model));
  if (!parsed.ok()) return parsed.error();
  LlamaCompletion& c = parsed.value();
  ApiResult<std::vector<int32_t>> ids = ResolvePrompt(ctx, model, c.prompt);
  if (!ids.ok()) return ids.error();
  const int64_t n_prompt = static_cast<int64_t>(ids.value().size());
  const int64_t n_ctx = model.backend->context_length();
  if (n_prompt >= n_ctx) {
    return InvalidRequest("the request exceeds the available context size: the prompt is " + std::to_string(n_prompt) +
                              " tokens, the context " + std::to_string(n_ctx) + " (raise --ctx-size)",
                          "prompt");
  }
  // llama-server stops at the end of the context (truncated: true) instead of refusing n_predict beyond
  // it; n_predict 0 evaluates the prompt (into the prefix cache) and returns no text.
  const int64_t room = n_ctx - n_prompt;
  if (c.n_predict > 0) c.req.max_tokens = static_cast<int32_t>(std::min<int64_t>(c.n_predict, room));
  if (c.n_predict == 0) c.req.max_tokens = 1;
  if (c.n_predict < 0) c.req.max_tokens = static_cast<int32_t>(room);
  c.req.prompt_ids = std::move(ids.value());
  c.req.prompt_is_ids = true;
  const std::string key_id =
      ctx.access->KeyIdentity(http.get_header_value("Authorization"), http.get_header_value("x-api-key"));
  ApiResult<std::shared_ptr<GenerationJob>> job = StartGeneration(ctx, model, c.req, key_id);
  if (!job.ok()) return job.error();
  LlamaReplyInfo info{model.id, static_cast<int32_t>(n_ctx), ""};
  if (c.prompt.size() == 1 && c.prompt[0].is_text) {
    info.prompt_text = c.prompt[0].text;
  } else if (StatusOr<std::string> text = model.backend->Detokenize(c.req.prompt_ids); text.ok()) {
    info.prompt_text = *text;
  }
  auto state = std::make_shared<CompletionStream>(
      CompletionStream{&ctx, std::move(lease.value()), job.value(), std::move(c), std::move(info)});
  if (state->c.req.stream) {
    StartEventStream(res, [state](SseWriter& w) { StreamCompletion(*state, w); }, [state] { state->job->Cancel(); });
    return std::nullopt;
  }
  PumpResult r = PumpJob(ctx, *state->job, state->c.req, nullptr, nullptr, "");
  RecordGeneration(ctx, kRoute, r);
  if (!r.status.ok()) return FromStatus(r.status);
  SetJson(res, LlamaCompletionJson(state->c, r.output, state->info, /*streamed=*/false));
  return std::nullopt;
}

// A reply built as text (bounded_reply.h). Its handler has called ReturnFreedMemorySoon, which runs after
// the reply is written.
void SetJsonText(httplib::Response& res, std::string body) {
  res.status = 200;
  res.body = std::move(body);  // set_content would copy it
  res.set_header("Content-Type", "application/json");
}

std::optional<ApiError> Tokenize(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<LlamaTokenize> req = ParseLlamaTokenize(body.value());
  if (!req.ok()) return req.error();
  const LlamaTokenize& t = req.value();
  ApiResult<ModelLease> model = ModelOfBody(ctx, body.value());
  if (!model.ok()) return model.error();
  InferenceBackend& backend = model.value().backend();
  StatusOr<std::vector<int32_t>> ids = backend.Tokenize(t.content, t.add_special, t.parse_special);
  if (!ids.ok()) return FromStatus(ids.status());
  auto piece_of = [&backend](int32_t id) {
    StatusOr<std::string> piece = backend.Detokenize({id});
    return piece.ok() ? *piece : std::string();
  };
  ApiResult<std::string> reply = TokenizeReply(*ids, t.with_pieces, piece_of, MaxReplyBytes(ctx.options));
  ReturnFreedMemorySoon();  // also when refused: the ids and the body's tree are as large as the text
  if (!reply.ok()) return reply.error();
  SetJsonText(res, std::move(reply.value()));
  return std::nullopt;
}

std::optional<ApiError> Detokenize(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<std::vector<int32_t>> ids = ParseLlamaDetokenize(body.value());
  if (!ids.ok()) return ids.error();
  ApiResult<ModelLease> model = ModelOfBody(ctx, body.value());
  if (!model.ok()) return model.error();
  ApiResult<std::string> reply = DetokenizeWithin(model.value().backend(), ids.value(), MaxReplyBytes(ctx.options));
  ReturnFreedMemorySoon();
  if (!reply.ok()) return reply.error();
  SetJsonText(res, std::move(reply.value()));
  return std::nullopt;
}

// Body: an OpenAI chat request (messages, tools, chat_template_kwargs); returns the rendered prompt.
std::optional<ApiError> ApplyTemplate(ServerContext& ctx, const httplib::Request& http, httplib::Response& res) {
  ApiResult<json> body = ParseJsonBody(http);
  if (!body.ok()) return body.error();
  ApiResult<CompletionRequest> req = ParseOpenAIChatRequest(body.value());
  if (!req.ok()) return req.error();
  ApiResult<ModelLease> model = AcquireModel(ctx, req.value().model);
  if (!model.ok()) return model.error();
  StatusOr<std::string> text = model.value().backend().ApplyChatTemplate(
      {req.value().messages, req.value().tools, true, req.value().template_kwargs});
  if (!text.ok()) return FromStatus(text.status());
  std::string reply = DumpJson(json{{"prompt", *text}});
  ReturnFreedMemorySoon();
  const size_t limit = MaxReplyBytes(ctx.options);
  if (reply.size() > limit) return ReplyTooLarge("the rendered prompt", limit, "send fewer or shorter messages");
  SetJsonText(res, std::move(reply));
  return std::nullopt;
}

LlamaServerInfo InfoOf(const ServerContext& ctx, const ServedModel& model) {
  const std::string path = ctx.models->multi() ? model.path : ctx.options.fake ? "fake.gguf" : ctx.options.model_path;
  return {path, model.id, model.backend->chat_template(), model.backend->context_length(), DefaultsOf(ctx, model)};
}

ApiError NotSupported(const std::string& what) { return {501, "not_supported_error", what, ""}; }

// The lanes of the model ?model= names (with several models: only if it is loaded; none otherwise,
// since looking must not load it).
std::optional<ApiError> Slots(ServerContext& ctx, const httplib::Request& q, httplib::Response& res) {
  if (!ctx.options.slots_endpoint) return NotSupported("This server does not support slots endpoint (--no-slots).");
  ModelLease model;
  if (!ctx.models->multi()) {
    model = std::move(AcquireModel(ctx, "").value());
  } else {
    const std::string name = q.get_param_value("model");
    if (name.empty()) return InvalidRequest("GET /slots?model=NAME: this server serves several models", "model");
    for (ModelLease& m : ctx.models->LeaseLoaded()) {
      if (m.id() == name) model = std::move(m);
    }
    if (!model) {
      SetJson(res, json::array());
      return std::nullopt;
    }
  }
  const Scheduler::Stats st = model.scheduler().stats();
  if (q.get_param_value("fail_on_no_slot") == "1" && st.running >= st.lanes) {
    return ApiError{503, "unavailable_error", "no slot available", ""};
  }
  SetJson(res, LlamaSlotsJson(st, model.backend().context_length()));
  return std::nullopt;
}

}  // namespace

std::vector<Route> LlamaRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  auto completion = [c](Req q, Res s) { return HandleCompletion(*c, q, s); };
  return {
      {"POST", "/completion", ApiFlavor::kOpenAI, true, completion},
      {"POST", "/completions", ApiFlavor::kOpenAI, true, completion},
      {"POST", "/tokenize", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return Tokenize(*c, q, s); }},
      {"POST", "/detokenize", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return Detokenize(*c, q, s); }},
      {"POST", "/apply-template", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return ApplyTemplate(*c, q, s); }},
      {"GET", "/props", ApiFlavor::kOpenAI, true,
       [c](Req q, Res s) -> std::optional<ApiError> {
         ApiResult<ModelLease> model = AcquireModel(*c, q.get_param_value("model"));
         if (!model.ok()) return model.error();
         const ServedModel& m = model.value().model();
         SetJson(s, LlamaPropsJson(InfoOf(*c, m), static_cast<int32_t>(m.scheduler->stats().lanes)));
         return std::nullopt;
       }},
      {"GET", "/slots", ApiFlavor::kOpenAI, true, [c](Req q, Res s) { return Slots(*c, q, s); }},
      {"GET", "/v1/health", ApiFlavor::kOpenAI, false,
       [c](Req, Res s) -> std::optional<ApiError> {
         const bool draining = c->draining.load();
         SetJson(s, HealthJson(*c), draining ? 503 : 200);
         return std::nullopt;
       }},
  };
}

}  // namespace ember::server
