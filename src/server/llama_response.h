// llama-server's native response shapes: the /completion object and its stream chunks, `timings` (also
// added to the OpenAI replies, as llama-server does), /props and /slots. docs/llama-server-compat.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/llama_request.h"
#include "server/openai_response.h"
#include "server/scheduler.h"

namespace ember::server {

// {cache_n, prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms,
// predicted_per_token_ms, predicted_per_second}. prompt_n counts the prompt tokens computed (the cached
// ones are cache_n). The first generated token comes from the prompt's last logits, so the generation
// rate is over predicted_n - 1 decode steps (0 when there was only one). Every value is finite.
nlohmann::json LlamaTimingsJson(const GenerationResult& r);

// "eos", "word" (a stop string), "limit" (n_predict or the context).
std::string LlamaStopType(const CompletionOutput& out);

// What the server runs a /completion with when the request says nothing (the /props "params").
nlohmann::json LlamaParamsJson(const SamplingParams& s, int32_t n_predict, const std::vector<std::string>& stop,
                               bool stream, int32_t n_probs);

struct LlamaReplyInfo {
  std::string model;
  int32_t n_ctx = 0;                 // per sequence
  std::string prompt_text;           // the prompt as the model saw it (detokenized)
};

// The final /completion object; streaming, its `content` is "" (the text went out in the chunks).
nlohmann::json LlamaCompletionJson(const LlamaCompletion& c, const CompletionOutput& out, const LlamaReplyInfo& info,
                                   bool streamed);
// One streamed piece: {index, content, tokens, stop:false, id_slot, tokens_predicted, tokens_evaluated}.
nlohmann::json LlamaChunkJson(const LlamaCompletion& c, const std::string& text, const std::vector<TokenEvent>& tokens,
                              int32_t tokens_predicted, int32_t tokens_evaluated);
// n_probs: [{id, token, bytes, logprob, top_logprobs: [...]}] per generated token.
nlohmann::json LlamaProbsJson(const std::vector<TokenEvent>& tokens);

struct LlamaServerInfo {
  std::string model_path;
  std::string model_alias;
  std::string chat_template;
  int32_t n_ctx = 0;                 // per sequence
  LlamaDefaults defaults;
};
// GET /props (read-only).
nlohmann::json LlamaPropsJson(const LlamaServerInfo& info, int32_t total_slots);
// GET /slots: one entry per scheduler lane.
nlohmann::json LlamaSlotsJson(const Scheduler::Stats& q, int32_t n_ctx);

}  // namespace ember::server
