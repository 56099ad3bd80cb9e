#include "server/llama_response.h"

#include <cmath>

namespace ember::server {

using nlohmann::json;

namespace {

double Finite(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

json TokenProb(const std::string& piece, int32_t id, float logprob) {
  json bytes = json::array();
  for (char ch : piece) bytes.push_back(static_cast<unsigned char>(ch));
  return {{"id", id}, {"token", piece}, {"bytes", bytes}, {"logprob", std::isfinite(logprob) ? logprob : -9999.0f}};
}

// The seed llama-server reports for "a fresh one per request" (LLAMA_DEFAULT_SEED).
constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

}  // namespace

json LlamaTimingsJson(const GenerationResult& r) {
  const int32_t prompt_n = std::max(0, r.prompt_tokens - r.cached_tokens);
  const double prompt_ms = Finite(r.prefill_ms);
  const int32_t predicted_n = r.completion_tokens;
  const double predicted_ms = Finite(r.decode_ms);
  const int32_t steps = predicted_n > 1 ? predicted_n - 1 : 0;
  json t = {{"cache_n", r.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", prompt_ms},
          {"prompt_per_token_ms", prompt_n > 0 ? Finite(prompt_ms / prompt_n) : 0.0},
          {"prompt_per_second", prompt_ms > 0 ? Finite(1e3 * prompt_n / prompt_ms) : 0.0},
          {"predicted_n", predicted_n},
          {"predicted_ms", predicted_ms},
          {"predicted_per_token_ms", steps > 0 ? Finite(predicted_ms / steps) : 0.0},
          {"predicted_per_second", steps > 0 && predicted_ms > 0 ? Finite(1e3 / predicted_ms * steps) : 0.0}};
  if (r.draft_tokens > 0) {  // as llama-server reports speculative decoding
    t["draft_n"] = r.draft_tokens;
    t["draft_n_accepted"] = r.draft_accepted;
  }
  return t;
}

std::string LlamaStopType(const CompletionOutput& out) {
  if (!out.stop_sequence.empty()) return "word";
  return out.result.finish_reason == FinishReason::kLength ? "limit" : "eos";
}

json LlamaParamsJson(const SamplingParams& s, int32_t n_predict, const std::vector<std::string>& stop, bool stream,
                     int32_t n_probs) {
  return {{"n_predict", n_predict},
          {"max_tokens", n_predict},
          {"seed", s.seed.value_or(kRandomSeed)},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"typical_p", 1.0},
          {"xtc_probability", 0.0},
          {"dynatemp_range", 0.0},
          {"repeat_penalty", s.repetition_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"mirostat", 0},
          {"dry_multiplier", 0.0},
          {"stop", stop},
          {"ignore_eos", false},
          {"stream", stream},
          {"n_probs", n_probs},
          {"grammar", ""},
          {"samplers", {"penalties", "top_k", "top_p", "min_p", "temperature"}},
          {"timings_per_token", false}};
}

json LlamaProbsJson(const std::vector<TokenEvent>& tokens) {
  json out = json::array();
  for (const TokenEvent& t : tokens) {
    json e = TokenProb(t.piece, t.id, t.logprob);
    json top = json::array();
    for (const TokenLogprob& alt : t.top_logprobs) top.push_back(TokenProb(alt.piece, alt.id, alt.logprob));
    e["top_logprobs"] = std::move(top);
    out.push_back(std::move(e));
  }
  return out;
}

json LlamaCompletionJson(const LlamaCompletion& c, const CompletionOutput& out, const LlamaReplyInfo& info,
                         bool streamed) {
  const GenerationResult& g = out.result;
  json ids = json::array();
  if (c.return_tokens && !streamed) {
    for (const TokenEvent& t : out.tokens) ids.push_back(t.id);
  }
  const bool prompt_only = c.n_predict == 0;
  const std::string content = streamed || prompt_only ? "" : out.text;
  json settings = LlamaParamsJson(c.req.sampling, c.n_predict, c.req.stop, c.req.stream, c.n_probs);
  settings["n_ctx"] = info.n_ctx;
  settings["model"] = info.model;
  json res = {{"index", 0},
              {"content", content},
              {"tokens", ids},
              {"id_slot", c.id_slot},
              {"stop", true},
              {"model", info.model},
              {"tokens_predicted", prompt_only ? 0 : g.completion_tokens},
              {"tokens_evaluated", g.prompt_tokens},
              {"generation_settings", std::move(settings)},
              {"prompt", info.prompt_text},
              {"has_new_line", content.find('\n') != std::string::npos},
              {"truncated", g.finish_reason == FinishReason::kLength && g.prompt_tokens + g.completion_tokens >= info.n_ctx},
              {"stop_type", prompt_only ? "limit" : LlamaStopType(out)},
              {"stopping_word", out.stop_sequence},
              {"tokens_cached", g.prompt_tokens + g.completion_tokens},
              {"timings", LlamaTimingsJson(g)}};
  if (prompt_only) res["timings"]["predicted_n"] = 0;
  if (c.n_probs > 0 && !streamed && !prompt_only) res["completion_probabilities"] = LlamaProbsJson(out.tokens);
  return res;
}

json LlamaChunkJson(const LlamaCompletion& c, const std::string& text, const std::vector<TokenEvent>& tokens,
                    int32_t tokens_predicted, int32_t tokens_evaluated) {
  json ids = json::array();
  for (const TokenEvent& t : tokens) ids.push_back(t.id);
  json res = {{"index", 0},
              {"content", text},
              {"tokens", ids},
              {"stop", false},
              {"id_slot", c.id_slot},
              {"tokens_predicted", tokens_predicted},
              {"tokens_evaluated", tokens_evaluated}};
  if (c.n_probs > 0) res["completion_probabilities"] = LlamaProbsJson(tokens);
  return res;
}

json LlamaPropsJson(const LlamaServerInfo& info, int32_t total_slots) {
  SamplingParams s;
  s.temperature = info.defaults.temperature;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.min_p = 0.05f;
  s.seed = info.defaults.seed;
  json slot = {{"id", 0},
               {"id_task", -1},
               {"n_ctx", info.n_ctx},
               {"speculative", false},
               {"is_processing", false},
               {"params", LlamaParamsJson(s, info.defaults.n_predict, {}, false, 0)},
               {"prompt", ""},
               {"next_token",
                {{"has_next_token", true}, {"has_new_line", false}, {"n_remain", -1}, {"n_decoded", 0}, {"stopping_word", ""}}}};
  return {{"default_generation_settings", std::move(slot)},
          {"total_slots", total_slots},
          {"model_path", info.model_path},
          {"model_alias", info.model_alias},
          {"chat_template", info.chat_template},
          {"chat_template_caps", json::object()},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"n_ctx", info.n_ctx},
          {"build_info", "ember"},
          {"is_sleeping", false},
          {"webui", false}};
}

json LlamaSlotsJson(const Scheduler::Stats& q, int32_t n_ctx) {
  json slots = json::array();
  for (const Scheduler::LaneState& l : q.lane_states) {
    json slot = {{"id", l.lane}, {"id_task", -1}, {"n_ctx", n_ctx}, {"speculative", false}, {"is_processing", l.busy},
                 {"n_completed", l.completed}};
    if (!l.busy) {
      slot["next_token"] = json::array({{{"has_next_token", false}, {"has_new_line", false}, {"n_remain", -1},
                                         {"n_decoded", 0}, {"stopping_word", ""}}});
    }
    slots.push_back(std::move(slot));
  }
  return slots;
}

}  // namespace ember::server
