// The steps every generation route shares, between parsing (openai_request / anthropic_request) and
// rendering (openai_response / anthropic_response):
//   StartGeneration: chat template -> tokenize -> context check -> job -> scheduler (HTTP thread);
//   PumpJob:         job events -> text (and, when streaming, the caller's writer) -> CompletionOutput.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/generation_job.h"
#include "server/openai_response.h"
#include "server/server_context.h"
#include "server/sse_writer.h"

namespace ember::server {

// Renders and tokenizes the prompt with `model` (the request's, leased by the caller for as long as the
// job lives: AcquireModel); rejects prompt + max_tokens beyond the context with a 400 naming both numbers
// (never truncates); submits to the model's scheduler. 429 when the queue is full, 503 when shutting down.
// `api_key_id` is who sent it (AccessControl::KeyIdentity, "" without keys): with the request's
// cache_salt it names the prompt-cache tenant, so callers with different keys never share cached KV.
ApiResult<std::shared_ptr<GenerationJob>> StartGeneration(ServerContext& ctx, const ServedModel& model,
                                                          const CompletionRequest& req, std::string_view api_key_id);

// The prompt `model` would see, as token ids (also for /v1/messages/count_tokens). Chat: the backend's
// TokenizeChat (client text never becomes control tokens). Raw completions: control-token strings in the
// prompt parse as control tokens unless the server runs with completion_prompt_specials off.
// token_limit > 0: a prompt whose byte length alone proves it needs more tokens than this is refused
// (400 naming the context length) before it is tokenized; 0 (count_tokens): never refused.
ApiResult<std::vector<int32_t>> PromptTokens(ServerContext& ctx, const ServedModel& model,
                                             const CompletionRequest& req, int64_t token_limit = 0);

// Called with each piece of reply text as it becomes safe to send; returns false if the client is gone.
using TextSink = std::function<bool(const std::string& text, const std::vector<TokenEvent>& tokens)>;

struct PumpResult {
  CompletionOutput output;
  // Streaming with tools: reply content that was held back (see ToolCallStreamGate) and still has to be
  // sent before the tool calls. Empty otherwise.
  std::string unsent_content;
  Status status;              // the backend's
  bool client_gone = false;
  double ttft_s = -1;         // seconds from pump start to the first text; -1 if none
};

// Drains the job. With `sink` set, text goes out as it arrives (with the logprobs of the tokens behind
// it) and `heartbeat` is written after each second of silence, which is also how a vanished client is
// noticed while queued; a failed write cancels the job. When the request offered tools, text that may
// be a tool call is held back and parsed at the end into output.parsed.
PumpResult PumpJob(ServerContext& ctx, GenerationJob& job, const CompletionRequest& req, const TextSink& sink,
                   const std::function<bool()>& heartbeat, const std::string& id_prefix);

// Token, TTFT and cache counters for one finished generation.
void RecordGeneration(ServerContext& ctx, const std::string& route, const PumpResult& r);

}  // namespace ember::server
