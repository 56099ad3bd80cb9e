#include "server/llama_metrics.h"

#include <algorithm>

namespace ember::server {
namespace {

double BatchValue(const BackendStats& b, const char* name, double otherwise) {
  for (const auto* values : {&b.batch_values, &b.engine_values}) {
    for (const StatValue& v : *values) {
      if (v.name == name) return v.value;
    }
  }
  return otherwise;
}

// Forward passes one generation needs when it runs alone (llama-server's counting): one for the prompt (when any of it had to be
// computed), one per generated token after the first (which comes from the prompt's logits), less the
// accepted drafts (a verification emits its accepted drafts with the token it decodes).
double DecodeCalls(const GenerationResult& r) {
  return (r.prompt_tokens > r.cached_tokens ? 1 : 0) + std::max(0, r.completion_tokens - 1 - r.draft_accepted);
}

}  // namespace

void DefineLlamaMetrics(MetricsRegistry& m) {
  const struct {
    const char* name;
    const char* help;
    bool counter;
  } kFamilies[] = {
      {"llamacpp:prompt_tokens_total", "Number of prompt tokens processed (computed, cache hits excluded).", true},
      {"llamacpp:prompt_tokens_cached_total", "Number of prompt tokens served from the prefix cache.", true},
      {"llamacpp:prompt_seconds_total", "Prompt process time.", true},
      {"llamacpp:tokens_predicted_total", "Number of generation tokens processed.", true},
      {"llamacpp:tokens_predicted_seconds_total", "Predict process time.", true},
      {"llamacpp:n_decode_total", "Total number of decode calls (batched steps, or per token when serial).", true},
      {"llamacpp:n_tokens_max", "Largest observed n_tokens (prompt + generated) of one request.", true},
      {"llamacpp:spec_decode_num_draft_tokens_total", "Speculative draft tokens verified (0 without --spec).", true},
      {"llamacpp:spec_decode_num_accepted_tokens_total", "Accepted speculative draft tokens.", true},
      {"llamacpp:spec_decode_num_drafts_total", "Speculative drafts (verifications that carried draft tokens).", true},
      {"llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", false},
      {"llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", false},
      {"llamacpp:requests_processing", "Number of requests processing.", false},
      {"llamacpp:requests_deferred", "Number of requests deferred (queued).", false},
      {"llamacpp:n_busy_slots_per_decode", "Average number of busy slots per decode call.", false},
      {"llamacpp:kv_cache_usage_ratio", "KV budget in use (running generations and the RAM prompt cache), 0 to 1.", false},
  };
  for (const auto& f : kFamilies) {
    if (f.counter) {
      m.DefineCounter(f.name, f.help);
    } else {
      m.DefineGauge(f.name, f.help);
    }
    m.Add(f.name, {}, 0);  // present from the first scrape, as llama-server's are
  }
  m.DefineCounter("ember_llamacpp_serial_decodes_total", "Estimated decode calls of finished generations (feeds llamacpp:n_decode_total when serial).");
}

void RecordLlamaGeneration(MetricsRegistry& m, const GenerationResult& r) {
  m.Add("llamacpp:prompt_tokens_total", {}, std::max(0, r.prompt_tokens - r.cached_tokens));
  m.Add("llamacpp:prompt_tokens_cached_total", {}, r.cached_tokens);
  m.Add("llamacpp:prompt_seconds_total", {}, std::max(0.0, r.prefill_ms) / 1e3);
  m.Add("llamacpp:tokens_predicted_total", {}, r.completion_tokens);
  m.Add("llamacpp:tokens_predicted_seconds_total", {}, std::max(0.0, r.decode_ms) / 1e3);
  m.Add("ember_llamacpp_serial_decodes_total", {}, DecodeCalls(r));
  m.Add("llamacpp:spec_decode_num_draft_tokens_total", {}, r.draft_tokens);
  m.Add("llamacpp:spec_decode_num_accepted_tokens_total", {}, r.draft_accepted);
  m.Add("llamacpp:spec_decode_num_drafts_total", {}, r.drafts);
  const double n = r.prompt_tokens + r.completion_tokens;
  if (n > m.Value("llamacpp:n_tokens_max", {})) m.Set("llamacpp:n_tokens_max", {}, n);
}

void RefreshLlamaMetrics(MetricsRegistry& m, const Scheduler::Stats& q, std::span<const BackendStats> backends) {
  auto rate = [&](const char* tokens, const char* seconds) {
    const double s = m.Value(seconds, {});
    return s > 0 ? m.Value(tokens, {}) / s : 0.0;
  };
  m.Set("llamacpp:prompt_tokens_seconds", {}, rate("llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total"));
  m.Set("llamacpp:predicted_tokens_seconds", {},
        rate("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total"));
  m.Set("llamacpp:requests_processing", {}, static_cast<double>(q.running));
  m.Set("llamacpp:requests_deferred", {}, static_cast<double>(q.queued));
  // Batched: the runners' steps and occupancy. Serial: the estimate RecordLlamaGeneration keeps.
  double steps = 0, busy_steps = 0, budget = 0, used = 0;
  for (const BackendStats& b : backends) {
    const double s = BatchValue(b, "steps", 0);
    steps += s;
    busy_steps += s * BatchValue(b, "occupancy", 0) * BatchValue(b, "max_seqs", 1);
    budget += BatchValue(b, "kv_budget_bytes", 0);
    used += BatchValue(b, "kv_reserved_bytes", 0) + BatchValue(b, "kv_cache_bytes", 0);
  }
  const double serial = m.Value("ember_llamacpp_serial_decodes_total", {});
  m.Set("llamacpp:n_decode_total", {}, steps > 0 ? steps : serial);
  m.Set("llamacpp:n_busy_slots_per_decode", {}, steps > 0 ? busy_steps / steps : (serial > 0 ? 1 : 0));
  m.Set("llamacpp:kv_cache_usage_ratio", {}, budget > 0 ? std::min(1.0, used / budget) : 0.0);
}

}  // namespace ember::server
