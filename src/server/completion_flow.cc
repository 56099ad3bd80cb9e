#include "server/completion_flow.h"

#include "cache/cache_namespace.h"

#include "server/llama_metrics.h"
#include "server/output_constraint.h"
#include "server/tool_call_parser.h"
#include "server/tool_stream_gate.h"

namespace ember::server {

ApiResult<std::vector<int32_t>> PromptTokens(ServerContext& ctx, const ServedModel& model,
                                             const CompletionRequest& req, int64_t token_limit) {
  if (req.kind == ApiKind::kCompletion) {
    if (req.prompt_is_ids) return req.prompt_ids;
    const int64_t at_least = MinTokensForBytes(req.prompt_text.size(), model.backend->max_token_bytes());
    if (token_limit > 0 && at_least > token_limit) {
      return InvalidRequest(PromptBytesTooLong(req.prompt_text.size(), at_least, token_limit,
                                               model.backend->context_length()),
                            req.max_tokens ? "max_tokens" : "prompt");
    }
    // A raw prompt is the caller's own markup (llama-server parses it the same way), so by default
    // "<|eot_id|>" in it is the control token; --completion-prompt-specials off makes it text.
    StatusOr<std::vector<int32_t>> ids = model.backend->Tokenize(req.prompt_text, /*add_special=*/true,
                                                               ctx.options.completion_prompt_specials);
    if (!ids.ok()) return FromStatus(ids.status());
    return std::move(ids).value();
  }
  // Messages are text: a user typing "<|eot_id|><|start_header_id|>system..." must not forge a turn.
  StatusOr<std::vector<int32_t>> ids =
      model.backend->TokenizeChat({req.messages, req.tools, true, req.template_kwargs, token_limit});
  if (!ids.ok()) {
    ApiError e = FromStatus(ids.status());
    if (token_limit > 0 && e.message.rfind("the prompt (", 0) == 0) {  // PromptBytesTooLong's
      e.param = req.max_tokens ? "max_tokens" : "messages";
    }
    return e;
  }
  return std::move(ids).value();
}

ApiResult<std::shared_ptr<GenerationJob>> StartGeneration(ServerContext& ctx, const ServedModel& model,
                                                          const CompletionRequest& req, std::string_view api_key_id) {
  if (ctx.draining.load()) return Overloaded("the server is shutting down");
  const int64_t n_ctx = model.backend->context_length();
  // The prompt may use what max_tokens leaves (and never the whole context: at least one token to reply).
  const int64_t token_limit = std::max<int64_t>(1, req.max_tokens ? n_ctx - *req.max_tokens : n_ctx - 1);
  ApiResult<std::vector<int32_t>> prompt = PromptTokens(ctx, model, req, token_limit);
  if (!prompt.ok()) return prompt.error();
  const int64_t n_prompt = static_cast<int64_t>(prompt.value().size());
  if (n_prompt == 0) return InvalidRequest("the prompt is empty", "prompt");
  if (req.max_tokens && n_prompt + *req.max_tokens > n_ctx) {
    return InvalidRequest("the prompt (" + std::to_string(n_prompt) + " tokens) plus max_tokens (" +
                              std::to_string(*req.max_tokens) + ") exceeds the context length (" +
                              std::to_string(n_ctx) + " tokens)",
                          "max_tokens");
  }
  if (n_prompt >= n_ctx) {
    return InvalidRequest("the prompt (" + std::to_string(n_prompt) + " tokens) does not fit the context length (" +
                              std::to_string(n_ctx) + " tokens)",
                          "messages");
  }
  // On the connection worker, before the queue: bounded by the compile budget, and stopped when the
  // client leaves (the probe is polled every few ms), so a hostile schema cannot hold the worker.
  ApiResult<std::shared_ptr<const grammar::Grammar>> constraint =
      BuildOutputGrammar(*model.backend, req, [&ctx] { return ctx.ClientGone(); });
  if (!constraint.ok()) return constraint.error();
  if (constraint.value() != nullptr) {  // a grammar too costly to follow is refused before it takes a lane
    if (Status st = model.backend->CheckGrammar(constraint.value()); !st.ok()) {
      if (st.code() != StatusCode::kInvalidArgument) return FromStatus(st);
      const bool forced_tool = req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kFunction;
      return InvalidRequest(st.message(), forced_tool                                      ? "tool_choice"
                                          : req.response_format != ResponseFormat::kText ? "response_format"
                                                                                         : "grammar");
    }
  }
  GenerationRequest g;
  g.prompt = std::move(prompt.value());
  g.grammar = std::move(constraint.value());
  g.sampling = req.sampling;
  // No max_tokens: --n-predict when set (llama-server's default), within the context; else the context.
  const int64_t room = n_ctx - n_prompt;
  g.max_tokens = static_cast<int32_t>(req.max_tokens                ? *req.max_tokens
                                      : ctx.options.n_predict > 0 ? std::min<int64_t>(ctx.options.n_predict, room)
                                                                  : room);
  g.logprobs = req.logprobs;
  g.top_logprobs = req.top_logprobs;
  g.cache_salt = CacheNamespace::TenantOf(api_key_id, req.cache_salt);
  // A request that could never be admitted (its KV over the whole budget) is refused now, not queued
  // for ever; the backend's message names the numbers.
  if (Status admissible = model.backend->CheckAdmissible(g); !admissible.ok()) {
    if (admissible.code() == StatusCode::kInvalidArgument) return InvalidRequest(admissible.message(), "max_tokens");
    return FromStatus(admissible);
  }
  auto job = std::make_shared<GenerationJob>(std::move(g), req.stop);
  Status st = model.scheduler->Submit(job);
  if (st.code() == StatusCode::kFailedPrecondition) return Overloaded(st.message());
  if (!st.ok()) return FromStatus(st);
  return job;
}

namespace {

// Splits tool calls out of the reply. When streaming, only the text the gate held back can hold calls.
void FinishOutput(const CompletionRequest& req, const std::string& id_prefix, const ToolCallStreamGate* gate,
                  PumpResult* r) {
  CompletionOutput& out = r->output;
  if (req.tools.empty()) {
    out.parsed = ParsedReply{out.text, {}};
    return;
  }
  if (gate != nullptr) {
    const std::string unsent = gate->Unsent();
    ParsedReply tail = ParseToolCalls(unsent);
    r->unsent_content = tail.content;
    out.parsed = ParsedReply{out.text.substr(0, out.text.size() - unsent.size()) + tail.content,
                             std::move(tail.tool_calls)};
  } else {
    out.parsed = ParseToolCalls(out.text);
  }
  // parallel_tool_calls false: one call per reply. A forced call's grammar already allows only one; a
  // free reply keeps its first.
  if (!req.parallel_tool_calls && out.parsed.tool_calls.size() > 1) out.parsed.tool_calls.resize(1);
  for (size_t i = 0; i < out.parsed.tool_calls.size(); ++i) {
    out.parsed.tool_calls[i].id = id_prefix + std::to_string(i);
  }
}

}  // namespace

PumpResult PumpJob(ServerContext& ctx, GenerationJob& job, const CompletionRequest& req, const TextSink& sink,
                   const std::function<bool()>& heartbeat, const std::string& id_prefix) {
  PumpResult r;
  ToolCallStreamGate gate;
  const bool gated = !req.tools.empty();
  std::vector<TokenEvent> unsent_tokens;  // logprobs wait for the text they produced
  const double start = ctx.SteadySeconds();
  double last_write = start;
  bool done = false;
  while (!done) {
    for (JobEvent& ev : job.Wait(std::chrono::milliseconds(100))) {
      if (ev.kind == JobEvent::Kind::kDone) {
        r.status = std::move(ev.status);
        r.output.result = std::move(ev.result);
        r.output.stop_sequence = std::move(ev.stop_sequence);
        done = true;
        continue;
      }
      if (r.ttft_s < 0 && !ev.text.empty()) r.ttft_s = ctx.SteadySeconds() - start;
      r.output.text += ev.text;
      r.output.tokens.insert(r.output.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      // Counted as they arrive, not when the generation ends, so /stats shows a live decode rate.
      if (!ev.tokens.empty()) ctx.metrics->Add("ember_generated_tokens_total", {}, static_cast<double>(ev.tokens.size()));
      if (!sink || r.client_gone) continue;
      unsent_tokens.insert(unsent_tokens.end(), ev.tokens.begin(), ev.tokens.end());
      const std::string text = gated ? gate.Push(ev.text) : ev.text;
      if (text.empty()) continue;
      r.client_gone = !sink(text, unsent_tokens);
      unsent_tokens.clear();
      last_write = ctx.SteadySeconds();
    }
    if (heartbeat && !r.client_gone && ctx.SteadySeconds() - last_write >= 1.0) {
      r.client_gone = !heartbeat();
      last_write = ctx.SteadySeconds();
    }
    // A reply sent whole at the end writes nothing meanwhile: probe the socket instead (each wait above
    // is 100 ms, so a client that left is noticed well within a second, queued or running).
    if (!heartbeat && !r.client_gone && ctx.ClientGone()) r.client_gone = true;
    if (r.client_gone) job.Cancel();  // keep draining: the lane reports kDone promptly after a cancel
  }
  FinishOutput(req, id_prefix, sink ? &gate : nullptr, &r);
  return r;
}

void RecordGeneration(ServerContext& ctx, const std::string& route, const PumpResult& r) {
  const GenerationResult& g = r.output.result;
  MetricsRegistry& m = *ctx.metrics;
  m.Add("ember_prompt_tokens_total", {{"route", route}}, g.prompt_tokens);
  m.Add("ember_completion_tokens_total", {{"route", route}}, g.completion_tokens);
  m.Add("ember_cached_prompt_tokens_total", {{"tier", g.cache_tier}}, g.cached_tokens);
  if (r.ttft_s >= 0) m.Observe("ember_time_to_first_token_seconds", {{"route", route}}, r.ttft_s);
  if (r.client_gone || g.finish_reason == FinishReason::kCancelled) m.Add("ember_cancelled_generations_total", {});
  RecordLlamaGeneration(m, g);
}

}  // namespace ember::server
