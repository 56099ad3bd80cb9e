// llama-server's response shapes (server/llama_response.h) and its metric names (server/llama_metrics.h).
#include "server/llama_response.h"

#include <gtest/gtest.h>

#include <vector>

#include "server/llama_metrics.h"

namespace ember::server {
namespace {

using nlohmann::json;

GenerationResult Result(int32_t prompt, int32_t cached, int32_t completion, double prefill_ms, double decode_ms) {
  GenerationResult r;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = completion;
  r.prefill_ms = prefill_ms;
  r.decode_ms = decode_ms;
  return r;
}

TEST(LlamaTimings, PromptCountsComputedTokensAndRatesSkipTheFirstToken) {
  json t = LlamaTimingsJson(Result(10, 4, 16, 30, 150));
  EXPECT_EQ(t["cache_n"], 4);
  EXPECT_EQ(t["prompt_n"], 6);
  EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 5);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 200);
  EXPECT_EQ(t["predicted_n"], 16);
  // 16 tokens are 15 decode steps: the first came from the prompt's logits.
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 1e3 / 150 * 15);
  EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 10);
  json one = LlamaTimingsJson(Result(3, 0, 1, 2, 0.5));
  EXPECT_EQ(one["predicted_per_second"], 0.0);
  EXPECT_EQ(one["predicted_per_token_ms"], 0.0);
}

TEST(LlamaTimings, EveryValueIsFiniteAndNonNegative) {
  for (const GenerationResult& r : {Result(0, 0, 0, 0, 0), Result(5, 5, 2, 0, 0), Result(5, 0, 2, -1, NAN),
                                    Result(5, 9, 3, INFINITY, 1)}) {
    const json t = LlamaTimingsJson(r);
    for (const auto& [key, value] : t.items()) {
      ASSERT_TRUE(value.is_number()) << key;
      EXPECT_TRUE(std::isfinite(value.get<double>())) << key;
      EXPECT_GE(value.get<double>(), 0) << key;
    }
  }
}

TEST(LlamaCompletionShape, FinalObjectAndStopTypes) {
  LlamaCompletion c;
  c.n_predict = 8;
  c.return_tokens = true;
  CompletionOutput out;
  out.text = "a\nb";
  out.tokens = {{1, "a", 0, {}}, {2, "\nb", 0, {}}};
  out.result = Result(4, 1, 2, 1, 1);
  out.result.finish_reason = FinishReason::kLength;
  LlamaReplyInfo info{"m", 64, "the prompt"};
  json j = LlamaCompletionJson(c, out, info, false);
  EXPECT_EQ(j["content"], "a\nb");
  EXPECT_EQ(j["tokens"], json::array({1, 2}));
  EXPECT_EQ(j["stop"], true);
  EXPECT_EQ(j["stop_type"], "limit");
  EXPECT_EQ(j["tokens_predicted"], 2);
  EXPECT_EQ(j["tokens_evaluated"], 4);
  EXPECT_EQ(j["has_new_line"], true);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["prompt"], "the prompt");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["generation_settings"]["n_ctx"], 64);
  EXPECT_EQ(j["generation_settings"]["n_predict"], 8);
  EXPECT_TRUE(j["timings"].is_object());
  EXPECT_FALSE(j.contains("completion_probabilities"));
  // Streamed: the text went out in the chunks.
  EXPECT_EQ(LlamaCompletionJson(c, out, info, true)["content"], "");
  // The context filled up: truncated.
  out.result.prompt_tokens = 62;
  EXPECT_EQ(LlamaCompletionJson(c, out, info, false)["truncated"], true);
  out.stop_sequence = "\n";
  EXPECT_EQ(LlamaStopType(out), "word");
  out.stop_sequence.clear();
  out.result.finish_reason = FinishReason::kStop;
  EXPECT_EQ(LlamaStopType(out), "eos");
  // n_predict 0: the prompt was evaluated, nothing is shown.
  c.n_predict = 0;
  json none = LlamaCompletionJson(c, out, info, false);
  EXPECT_EQ(none["content"], "");
  EXPECT_EQ(none["tokens_predicted"], 0);
  EXPECT_EQ(none["timings"]["predicted_n"], 0);
}

TEST(LlamaCompletionShape, ChunksAndProbabilities) {
  LlamaCompletion c;
  c.n_probs = 2;
  TokenEvent t{7, "\xC3", -0.5f, {{7, "\xC3", -0.5f}, {8, "x", -1.5f}}};
  json chunk = LlamaChunkJson(c, "", {t}, 1, 3);
  EXPECT_EQ(chunk["stop"], false);
  EXPECT_EQ(chunk["tokens"], json::array({7}));
  EXPECT_EQ(chunk["tokens_predicted"], 1);
  EXPECT_EQ(chunk["tokens_evaluated"], 3);
  const json& p = chunk["completion_probabilities"][0];
  EXPECT_EQ(p["id"], 7);
  EXPECT_EQ(p["bytes"], json::array({195}));
  EXPECT_EQ(p["top_logprobs"].size(), 2u);
  EXPECT_FLOAT_EQ(p["top_logprobs"][1]["logprob"].get<float>(), -1.5f);
}

TEST(LlamaProps, DefaultsAndSlots) {
  LlamaServerInfo info;
  info.model_path = "/m/model.gguf";
  info.model_alias = "alias";
  info.chat_template = "{{ x }}";
  info.n_ctx = 256;
  info.defaults.seed = 42;
  info.defaults.n_predict = 64;
  json p = LlamaPropsJson(info, 2);
  EXPECT_EQ(p["total_slots"], 2);
  EXPECT_EQ(p["model_path"], "/m/model.gguf");
  EXPECT_EQ(p["chat_template"], "{{ x }}");
  EXPECT_EQ(p["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(p["default_generation_settings"]["params"]["seed"], 42);
  EXPECT_EQ(p["default_generation_settings"]["params"]["n_predict"], 64);
  info.defaults.seed.reset();
  EXPECT_EQ(LlamaPropsJson(info, 1)["default_generation_settings"]["params"]["seed"], 4294967295u);

  Scheduler::Stats q;
  q.lanes = 2;
  q.lane_states = {{0, true, 3}, {1, false, 1}};
  json slots = LlamaSlotsJson(q, 256);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["id"], 0);
  EXPECT_EQ(slots[0]["is_processing"], true);
  EXPECT_EQ(slots[1]["is_processing"], false);
  EXPECT_EQ(slots[1]["n_ctx"], 256);
  EXPECT_EQ(slots[1]["next_token"][0]["n_remain"], -1);
  EXPECT_FALSE(slots[0].contains("params"));
}

TEST(LlamaMetrics, NamesTypesAndValues) {
  MetricsRegistry m;
  DefineLlamaMetrics(m);
  RecordLlamaGeneration(m, Result(10, 4, 16, 500, 2000));
  RecordLlamaGeneration(m, Result(3, 0, 1, 100, 0));
  Scheduler::Stats q;
  q.running = 1;
  q.queued = 2;
  BackendStats b;
  b.batch_values = {{"steps", 40, true}, {"occupancy", 0.5, false}, {"max_seqs", 4, false},
                    {"kv_budget_bytes", 1000, false}, {"kv_reserved_bytes", 200, false}, {"kv_cache_bytes", 50, false}};
  RefreshLlamaMetrics(m, q, std::span<const BackendStats>(&b, 1));
  EXPECT_EQ(m.Value("llamacpp:prompt_tokens_total", {}), 9);
  EXPECT_EQ(m.Value("llamacpp:prompt_tokens_cached_total", {}), 4);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:prompt_seconds_total", {}), 0.6);
  EXPECT_EQ(m.Value("llamacpp:tokens_predicted_total", {}), 17);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:predicted_tokens_seconds", {}), 17 / 2.0);
  EXPECT_EQ(m.Value("llamacpp:n_tokens_max", {}), 26);
  EXPECT_EQ(m.Value("llamacpp:n_decode_total", {}), 40);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:n_busy_slots_per_decode", {}), 2);
  EXPECT_EQ(m.Value("llamacpp:requests_processing", {}), 1);
  EXPECT_EQ(m.Value("llamacpp:requests_deferred", {}), 2);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:kv_cache_usage_ratio", {}), 0.25);
  const std::string text = m.RenderPrometheus();
  for (const char* counter : {"prompt_tokens_total", "prompt_tokens_cached_total", "prompt_seconds_total",
                              "tokens_predicted_total", "tokens_predicted_seconds_total", "n_decode_total",
                              "n_tokens_max", "spec_decode_num_draft_tokens_total"}) {
    const std::string name = std::string("llamacpp:") + counter;
    EXPECT_NE(text.find("# TYPE " + name + " counter\n"), std::string::npos) << name;
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find("\n" + name + " "), std::string::npos) << name;
  }
  for (const char* gauge : {"prompt_tokens_seconds", "predicted_tokens_seconds", "requests_processing",
                            "requests_deferred", "n_busy_slots_per_decode", "kv_cache_usage_ratio"}) {
    const std::string name = std::string("llamacpp:") + gauge;
    EXPECT_NE(text.find("# TYPE " + name + " gauge\n"), std::string::npos) << name;
  }
  // Serial (no batch steps): the per-generation estimate, 1 prompt decode + 15 steps, then 1 + 0.
  MetricsRegistry serial;
  DefineLlamaMetrics(serial);
  RecordLlamaGeneration(serial, Result(10, 4, 16, 1, 1));
  RecordLlamaGeneration(serial, Result(3, 0, 1, 1, 1));
  RefreshLlamaMetrics(serial, {}, {});
  EXPECT_EQ(serial.Value("llamacpp:n_decode_total", {}), 17);
}

// With several models loaded, llama-server's engine gauges are the servers' sum: steps and KV bytes add,
// busy slots per decode is the step-weighted mean (here (10 * 1 + 30 * 3) / 40).
TEST(LlamaMetrics, SeveralModelsAddUp) {
  MetricsRegistry m;
  DefineLlamaMetrics(m);
  BackendStats a, b;
  a.batch_values = {{"steps", 10, true}, {"occupancy", 0.25, false}, {"max_seqs", 4, false},
                    {"kv_budget_bytes", 1000, false}, {"kv_reserved_bytes", 100, false}, {"kv_cache_bytes", 0, false}};
  b.batch_values = {{"steps", 30, true}, {"occupancy", 0.75, false}, {"max_seqs", 4, false},
                    {"kv_budget_bytes", 3000, false}, {"kv_reserved_bytes", 500, false}, {"kv_cache_bytes", 400, false}};
  const std::vector<BackendStats> both = {a, b};
  RefreshLlamaMetrics(m, {}, both);
  EXPECT_EQ(m.Value("llamacpp:n_decode_total", {}), 40);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:n_busy_slots_per_decode", {}), 2.5);
  EXPECT_DOUBLE_EQ(m.Value("llamacpp:kv_cache_usage_ratio", {}), 0.25);
}

// --spec: the speculative counters count what the generations drafted and accepted, and serial decode
// calls leave out the accepted drafts (each verification emits them with its own token).
TEST(LlamaMetrics, SpeculativeCountersAndDecodeCalls) {
  MetricsRegistry m;
  DefineLlamaMetrics(m);
  GenerationResult r = Result(10, 0, 16, 1, 1);
  r.draft_tokens = 12;
  r.draft_accepted = 9;
  r.drafts = 4;
  RecordLlamaGeneration(m, r);
  RefreshLlamaMetrics(m, {}, {});
  EXPECT_EQ(m.Value("llamacpp:spec_decode_num_draft_tokens_total", {}), 12);
  EXPECT_EQ(m.Value("llamacpp:spec_decode_num_accepted_tokens_total", {}), 9);
  EXPECT_EQ(m.Value("llamacpp:spec_decode_num_drafts_total", {}), 4);
  EXPECT_EQ(m.Value("llamacpp:n_decode_total", {}), 1 + 15 - 9);
}

}  // namespace
}  // namespace ember::server
