#include "bench/cache_bench.h"

#include <algorithm>
#include <cstdio>

#include "session/cached_session.h"
#include "cache/kv_entry_state.h"
#include "util/stopwatch.h"

namespace ember {

std::vector<int32_t> SyntheticIds(int64_t n, uint32_t seed, int32_t n_vocab) {
  const uint32_t range = static_cast<uint32_t>(std::max(1, std::min(n_vocab - 200, 20000)));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = 100 + static_cast<int32_t>((x >> 8) % range);
  }
  return ids;
}

SessionRequest BenchRequest(std::vector<int32_t> prompt, int64_t max_tokens) {
  SessionRequest r;
  r.prompt = std::move(prompt);
  r.generate.max_tokens = max_tokens;
  r.generate.sampling.temperature = 0;
  r.generate.stop_at_eog = false;  // every turn generates the same count, cache on or off
  return r;
}

namespace {

// Times the prefill of prompt[cached, L) on a sequence that already holds prompt[0, cached).
StatusOr<double> TimeNewTokensAlone(Engine& engine, PromptCache& cache, const std::vector<int32_t>& prompt,
                                    int64_t cached) {
  EMBER_ASSIGN_OR_RETURN(auto seq, engine.NewSequence());
  if (cached > 0) {
    EMBER_ASSIGN_OR_RETURN(CacheHit hit, cache.Lookup(std::span(prompt).first(static_cast<size_t>(cached) + 1), ""));
    if (hit.p != cached) return Internal("cache bench: the prefix is no longer cached");
    EMBER_RETURN_IF_ERROR(seq->Adopt(std::move(dynamic_cast<KvEntryState&>(*hit.view)).Take(),
                                     {prompt.begin(), prompt.begin() + cached}));
  }
  const Stopwatch t0;
  EMBER_RETURN_IF_ERROR(engine.Prefill(*seq, std::span(prompt).subspan(static_cast<size_t>(cached))).status());
  return t0.ElapsedSeconds();
}

}  // namespace

StatusOr<std::vector<CacheBenchTurn>> RunCacheBench(Engine& engine, const CacheBenchOptions& o) {
  if (o.turns <= 0 || o.system_tokens <= 0 || o.user_tokens <= 0 || o.reply_tokens <= 0) {
    return InvalidArgument("cache bench: turns and token counts must be positive");
  }
  const int32_t n_vocab = static_cast<int32_t>(engine.model().config().n_vocab);
  PromptCache cache(PromptCacheOptions{o.cache_bytes, nullptr});
  CachedSession on(engine, &cache), off(engine, nullptr);
  std::vector<CacheBenchTurn> turns;
  std::vector<int32_t> history = SyntheticIds(o.system_tokens, o.seed, n_vocab);
  if (o.progress != nullptr) o.progress->SetTotal(static_cast<uint64_t>(std::max(o.turns, 0)));
  for (int t = 0; t < o.turns; ++t) {
    std::vector<int32_t> prompt = history;
    const auto user = SyntheticIds(o.user_tokens, o.seed * 1000 + static_cast<uint32_t>(t) + 1, n_vocab);
    prompt.insert(prompt.end(), user.begin(), user.end());
    EMBER_ASSIGN_OR_RETURN(SessionResult r, on.Generate(BenchRequest(prompt, o.reply_tokens), nullptr));
    CacheBenchTurn row;
    row.turn = t + 1;
    row.prompt_tokens = r.prompt_tokens;
    row.cached_tokens = r.cached_tokens;
    row.prefilled_tokens = r.prefilled_tokens;
    row.ttft_on_s = r.ttft_s;
    row.cow_bytes_copied = r.cow_bytes_copied;
    row.decode_tok_s = r.gen.decode_s > 0 ? static_cast<double>(r.gen.decode_tokens) / r.gen.decode_s : 0;
    EMBER_ASSIGN_OR_RETURN(row.prefill_new_s, TimeNewTokensAlone(engine, cache, prompt, r.cached_tokens));
    EMBER_ASSIGN_OR_RETURN(SessionResult cold, off.Generate(BenchRequest(prompt, 1), nullptr));
    row.ttft_off_s = cold.ttft_s;
    turns.push_back(row);
    history = std::move(prompt);
    history.insert(history.end(), r.gen.tokens.begin(), r.gen.tokens.end());
    AdvanceBar(o.progress, "turn " + std::to_string(t + 1) + "/" + std::to_string(o.turns));
  }
  return turns;
}

void PrintCacheBench(const std::vector<CacheBenchTurn>& turns, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%4s %7s %7s %7s %11s %12s %11s %9s %8s %9s\n", "turn", "prompt", "cached",
                "prefill", "ttft_on_ms", "ttft_off_ms", "new_only_ms", "on/new", "speedup", "decode/s");
  out << line;
  double on = 0, off = 0;
  for (const auto& t : turns) {
    on += t.ttft_on_s;
    off += t.ttft_off_s;
    std::snprintf(line, sizeof line, "%4d %7lld %7lld %7lld %11.1f %12.1f %11.1f %9.3f %7.1fx %9.1f\n", t.turn,
                  static_cast<long long>(t.prompt_tokens), static_cast<long long>(t.cached_tokens),
                  static_cast<long long>(t.prefilled_tokens), t.ttft_on_s * 1e3, t.ttft_off_s * 1e3,
                  t.prefill_new_s * 1e3, t.prefill_new_s > 0 ? t.ttft_on_s / t.prefill_new_s : 0,
                  t.ttft_on_s > 0 ? t.ttft_off_s / t.ttft_on_s : 0, t.decode_tok_s);
    out << line;
  }
  std::snprintf(line, sizeof line, "total TTFT: cache on %.1f ms, off %.1f ms (%.1fx)\n", on * 1e3, off * 1e3,
                on > 0 ? off / on : 0);
  out << line;
}

StatusOr<std::unique_ptr<Engine>> LoadCacheBenchEngine(const std::string& model, int threads,
                                                        const CacheBenchOptions& options) {
  EngineOptions eo;
  eo.threads = threads;
  eo.load_tokenizer = false;
  eo.n_ctx = options.system_tokens + options.turns * (options.user_tokens + options.reply_tokens) + 16;
  return Engine::Load(model, eo);
}

}  // namespace ember
