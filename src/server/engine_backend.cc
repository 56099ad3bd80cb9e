// The real engine behind the HTTP layer: Engine (model, tokenizer, forward pass) + the prompt cache (RAM,
// and the SSD cold tier unless disabled) through TieredCache, and the KV budget (session/kv_budget.h).
// The scheduler runs --parallel lanes; each Generate() does its cache I/O on its lane (BatchedSession)
// and submits the job to one BatchRunner, whose step thread advances up to --parallel sequences per
// forward pass and whose queue is the only memory admission (a batch of one at --parallel 1, the same
// step loop `ember generate` runs alone). The other methods only
// read immutable state (tokenizer, parsed template) or take the caches' and the budget's own locks.
#include "server/engine_backend.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tiered/cache_identity.h"
#include "cache/cache_namespace.h"
#include "cache/cache_options.h"
#include "session/batched_session.h"
#include "session/kv_budget.h"
#include "cache/prompt_cache.h"
#include "tiered/tiered_cache.h"
#include "util/env.h"
#include "util/progress.h"
#include "util/stopwatch.h"
#include "coldtier/private_dir.h"
#include "engine/batch_runner.h"
#include "engine/drafter.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "engine/load_progress.h"
#include "grammar/grammar_matcher.h"
#include "grammar/mask_budget.h"
#include "server/json_input.h"
#include "server/sampling_seed.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ember::server {
namespace {

using nlohmann::ordered_json;

// Arguments arrive as JSON text; templates expect an object (they iterate it or print it with tojson).
// Text that is not JSON, or nests deeper than kMaxJsonDepth, reaches the template as the string it is
// (the request parsers already refused over-deep arguments; this keeps any other caller bounded too).
ordered_json ParsedOrText(const std::string& text) {
  StatusOr<ordered_json> j = ParseOrderedJsonLimited(text);
  return j.ok() ? std::move(j).value() : ordered_json(text);
}

ordered_json MessagesJson(const std::vector<ChatMessage>& messages) {
  ordered_json out = ordered_json::array();
  for (const ChatMessage& m : messages) {
    ordered_json j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      ordered_json calls = ordered_json::array();
      for (const ToolCall& c : m.tool_calls)
        calls.push_back({{"id", c.id}, {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", ParsedOrText(c.arguments_json)}}}});
      j["tool_calls"] = calls;
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) j["name"] = m.name;
    if (!m.reasoning_content.empty()) j["reasoning_content"] = m.reasoning_content;
    out.push_back(std::move(j));
  }
  return out;
}

// Passes every string under `root` (object keys too, at any depth, without recursion) through
// Tokenizer::AsPlainText: everything there came from the client, so no control token may parse out of it.
void MarkClientStrings(const Tokenizer& tok, ordered_json& root) {
  std::vector<ordered_json*> todo{&root};
  while (!todo.empty()) {
    ordered_json& j = *todo.back();
    todo.pop_back();
    if (j.is_string()) {
      j = tok.AsPlainText(j.get_ref<const std::string&>());
    } else if (j.is_array()) {
      for (ordered_json& e : j) todo.push_back(&e);
    } else if (j.is_object()) {
      bool keys_change = false;  // e.g. a property name in a tool's schema, printed by tojson
      for (auto it = j.begin(); it != j.end() && !keys_change; ++it) keys_change = tok.AsPlainText(it.key()) != it.key();
      if (keys_change) {
        ordered_json rebuilt = ordered_json::object();
        for (auto it = j.begin(); it != j.end(); ++it) rebuilt[tok.AsPlainText(it.key())] = std::move(it.value());
        j = std::move(rebuilt);
      }
      for (auto it = j.begin(); it != j.end(); ++it) todo.push_back(&it.value());
    }
  }
}

SamplerParams ToSampler(const SamplingParams& s) {
  SamplerParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  p.repeat_penalty = s.repetition_penalty;
  p.presence_penalty = s.presence_penalty;
  p.frequency_penalty = s.frequency_penalty;
  p.seed = SeedFor(s.seed);
  for (const auto& [id, bias] : s.logit_bias) p.logit_bias[id] = bias;
  return p;
}

struct BatchConfig {
  int parallel = 1;
  int64_t step_tokens = 256;
  double step_ms = 0;
  int64_t checkpoint_every = 2048;
  uint64_t kv_budget_bytes = 0;
  SpeculativeOptions spec;  // draft_engine: set by the backend to the draft model it owns
};

// The most input bytes one token can consume: its stored text (byte-level BPE stores bytes >= 0x80 as
// two-byte characters, SentencePiece spaces as three-byte U+2581: never fewer than it consumes) or its
// rendering, whichever is longer; at least 4, one UTF-8 character (an unknown one becomes one token).
size_t LongestPiece(const Tokenizer& tok) {
  size_t longest = 4;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    longest = std::max({longest, tok.spec().tokens[static_cast<size_t>(id)].size(),
                        tok.TokenToPiece(id, /*render_special=*/true).size()});
  }
  return longest;
}

class EngineBackend final : public InferenceBackend {
 public:
  EngineBackend(std::unique_ptr<Engine> engine, std::unique_ptr<Engine> draft, std::unique_ptr<TieredCache> tiers,
                std::string id, double flush_timeout_s, const BatchConfig& batch)
      : engine_(std::move(engine)), draft_(std::move(draft)), spec_(batch.spec), tiers_(std::move(tiers)), id_(std::move(id)),
        flush_timeout_s_(flush_timeout_s), parallel_(batch.parallel),
        budget_(KvBudgetOptions{batch.kv_budget_bytes, KvBytesPerPosition(engine_->kv_config()),
                                engine_->kv_config().block_size, engine_->kv_config().recurrent_bytes()},
                tiers_.get()),
        lanes_(static_cast<size_t>(std::max(parallel_, 1))) {
    max_token_bytes_ = LongestPiece(*engine_->tokenizer());
    for (size_t i = 0; i < lanes_.size(); ++i) lanes_[i].lane = static_cast<int32_t>(i);
    spec_.draft_engine = draft_.get();
    // One runner whatever --parallel is (a batch of one at --parallel 1): its queue is the only place a
    // generation waits for memory (docs/batching.md).
    BatchRunnerOptions bo;
    bo.max_seqs = std::max(parallel_, 1);
    bo.step_tokens = batch.step_tokens;
    bo.step_ms = batch.step_ms;
    // Drafted rows per step: room for four sequences' full drafts (none when speculation is off).
    bo.draft_rows_per_step = spec_.enabled() ? 4 * spec_.draft_max : 0;
    bo.kv_budget_bytes = static_cast<int64_t>(budget_.budget_bytes());
    bo.kv_outside_bytes = [b = &budget_] { return static_cast<int64_t>(b->CacheBytes()); };
    runner_ = std::make_unique<BatchRunner>(*engine_, bo);
    CachedSessionOptions so;
    so.budget = &budget_;
    so.checkpoint_every = batch.checkpoint_every;
    batched_ = std::make_unique<BatchedSession>(*engine_, *runner_, tiers_.get(), so);
  }
  ~EngineBackend() override {
    batched_.reset();
    runner_->Shutdown();  // the server cancelled or drained every generation before this
  }

  int max_parallel() const override { return parallel_; }
  // --chat-template-file: replaces the model's tokenizer.chat_template (before serving starts).
  void set_chat_template(std::string text) { template_override_ = std::move(text); }

  Status CheckAdmissible(const GenerationRequest& req) const override {
    return budget_.CheckAdmissible(static_cast<int64_t>(req.prompt.size()), req.max_tokens);
  }

  MemoryWaits memory_waits() const override {
    const BatchRunnerStats st = runner_->stats();
    return {static_cast<size_t>(st.waiting_for_memory), st.admission_waits};
  }

  std::string model_id() const override { return id_; }
  std::string chat_template() const override { return Template(); }
  const std::string& Template() const {
    return template_override_.empty() ? engine_->tokenizer()->spec().chat_template : template_override_;
  }
  int32_t context_length() const override { return static_cast<int32_t>(engine_->options().n_ctx); }
  size_t max_token_bytes() const override { return max_token_bytes_; }

  StatusOr<std::vector<int32_t>> Tokenize(const std::string& text, bool add_special,
                                          bool parse_special) const override {
    return engine_->tokenizer()->Encode(text, add_special, parse_special);
  }
  StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids) const override {
    for (int32_t id : ids)
      if (id < 0 || id >= engine_->tokenizer()->n_vocab())
        return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary");
    return engine_->tokenizer()->Decode(ids, /*render_special=*/false);
  }

  ToolCallSyntax tool_call_syntax() const override {
    return DetectToolCallSyntax(engine_->tokenizer()->spec().chat_template);
  }

  StatusOr<std::string> ApplyChatTemplate(const ChatTemplateInput& in) const override {
    return RenderChat(in, /*client_text_plain=*/false);
  }

  StatusOr<std::vector<int32_t>> TokenizeChat(const ChatTemplateInput& in) const override {
    EMBER_ASSIGN_OR_RETURN(std::string text, RenderChat(in, /*client_text_plain=*/true));
    if (in.token_limit > 0) {
      // The marks vanish before encoding, so they do not count toward what the tokens must cover.
      size_t marks = 0;
      for (size_t at = text.find(Tokenizer::kTextMark); at != std::string::npos;
           at = text.find(Tokenizer::kTextMark, at + Tokenizer::kTextMark.size())) ++marks;
      const size_t bytes = text.size() - marks * Tokenizer::kTextMark.size();
      const int64_t at_least = MinTokensForBytes(bytes, max_token_bytes_);
      if (at_least > in.token_limit) {
        return InvalidArgument(PromptBytesTooLong(bytes, at_least, in.token_limit, context_length()));
      }
    }
    // The rendered template already holds BOS and its other control tokens as text; the client's text
    // carries marks that keep its control-token strings text (Tokenizer::AsPlainText).
    return engine_->tokenizer()->EncodeWithMarks(text, /*add_special=*/false);
  }

  Status Generate(const GenerationRequest& req, const TokenCallback& on_token, GenerationResult* out) override {
    out->prompt_tokens = static_cast<int32_t>(req.prompt.size());
    SessionRequest sr;
    sr.prompt = req.prompt;
    CacheNamespace ns;
    ns.tenant = req.cache_salt;
    sr.ns = ns.Key();
    sr.generate.max_tokens = req.max_tokens;
    sr.generate.sampling = ToSampler(req.sampling);
    sr.generate.cancel = req.cancel;
    sr.generate.speculative = spec_;
    const Tokenizer& tok = *engine_->tokenizer();
    // The engine hands each token's logprobs over just before the token itself (same thread).
    TokenLogprobs pending;
    if (req.logprobs) {
      sr.generate.top_logprobs = req.top_logprobs;
      sr.generate.on_logprobs = [&pending](const TokenLogprobs& lp) { pending = lp; };
    }
    auto piece = [&tok](int32_t id) { return std::string(tok.TokenToPiece(id, /*render_special=*/false)); };
    auto cb = [&](int32_t id) {
      if (tok.IsEog(id)) return true;  // the engine ends on it; the server never sees stop tokens
      TokenEvent ev;
      ev.id = id;
      ev.piece = piece(id);
      if (req.logprobs && pending.token == id) {
        ev.logprob = pending.logprob;
        for (const auto& alt : pending.top) ev.top_logprobs.push_back({alt.token, piece(alt.token), alt.logprob});
      }
      return on_token(ev);
    };
    // One matcher per generation over the model's shared vocabulary index (docs/grammar.md).
    std::unique_ptr<grammar::GrammarMatcher> matcher;
    if (req.grammar != nullptr) {
      matcher = std::make_unique<grammar::GrammarMatcher>(req.grammar, GrammarVocabulary());
      sr.generate.constraint = matcher.get();
    }
    auto r = batched_->Generate(sr, cb);
    if (!r.ok()) return r.status();
    NoteLane(req.lane, *r);
    checkpoints_.fetch_add(static_cast<uint64_t>(r->checkpoints_stored), std::memory_order_relaxed);
    out->cached_tokens = static_cast<int32_t>(r->cached_tokens);
    out->cache_tier = r->tier;
    int32_t n = static_cast<int32_t>(r->gen.tokens.size());
    if (n > 0 && tok.IsEog(r->gen.tokens.back())) --n;
    out->completion_tokens = n;
    switch (r->gen.stop) {
      case StopReason::kLength: out->finish_reason = FinishReason::kLength; break;
      case StopReason::kCancelled: out->finish_reason = FinishReason::kCancelled; break;
      default: out->finish_reason = FinishReason::kStop; break;
    }
    out->prefill_ms = r->gen.prefill_s * 1000;
    out->decode_ms = r->gen.decode_s * 1000;
    out->draft_tokens = static_cast<int32_t>(r->gen.draft_tokens);
    out->draft_accepted = static_cast<int32_t>(r->gen.draft_accepted);
    out->drafts = static_cast<int32_t>(r->gen.drafts);
    draft_tokens_.fetch_add(static_cast<uint64_t>(r->gen.draft_tokens), std::memory_order_relaxed);
    draft_accepted_.fetch_add(static_cast<uint64_t>(r->gen.draft_accepted), std::memory_order_relaxed);
    decode_tokens_.fetch_add(static_cast<uint64_t>(r->gen.decode_tokens), std::memory_order_relaxed);
    decode_us_.fetch_add(static_cast<uint64_t>(r->gen.decode_s * 1e6), std::memory_order_relaxed);
    return Status::Ok();
  }

  Status CheckGrammar(const std::shared_ptr<const grammar::Grammar>& g) override {
    return grammar::ProbeFirstMask(g, GrammarVocabulary());
  }

  // Built on the first constrained request (a pass and a sort over the vocabulary), then shared.
  std::shared_ptr<const grammar::Vocabulary> GrammarVocabulary() EXCLUDES(vocab_mu_) {
    MutexLock lock(&vocab_mu_);
    if (vocab_ == nullptr) vocab_ = MakeGrammarVocabulary(*engine_->tokenizer());
    return vocab_;
  }

  BackendStats Stats() const override {
    const PromptCacheStats s = tiers_->ram().stats();
    BackendStats b;
    b.engine = "ember-cpu";
    b.engine_values = {{"threads", static_cast<double>(engine_->threads()), false},
                       {"context_length", static_cast<double>(engine_->options().n_ctx), false}};
    if (engine_->kv_config().has_recurrent()) {  // a hybrid: its checkpoints (docs/hybrid.md)
      b.engine_values.push_back({"recurrent_state_bytes", static_cast<double>(engine_->kv_config().recurrent_bytes()), false});
      b.engine_values.push_back({"checkpoints_stored", static_cast<double>(checkpoints_.load(std::memory_order_relaxed)), true});
    }
    if (spec_.enabled()) {  // speculative decoding: acceptance and the decode rate it gives
      const double drafted = static_cast<double>(draft_tokens_.load(std::memory_order_relaxed));
      const double accepted = static_cast<double>(draft_accepted_.load(std::memory_order_relaxed));
      const double dec_s = static_cast<double>(decode_us_.load(std::memory_order_relaxed)) / 1e6;
      const double dec_n = static_cast<double>(decode_tokens_.load(std::memory_order_relaxed));
      b.engine_values.push_back({"draft_tokens", drafted, true});
      b.engine_values.push_back({"draft_accepted", accepted, true});
      b.engine_values.push_back({"draft_acceptance", drafted > 0 ? accepted / drafted : 0.0, false});
      b.engine_values.push_back({"decode_tokens_per_second", dec_s > 0 ? dec_n / dec_s : 0.0, false});
    }
    CacheTierStats ram;
    ram.tier = "ram";
    ram.values = {{"entries", static_cast<double>(s.entries), false}, {"bytes", static_cast<double>(s.bytes), false},
                  {"cap", static_cast<double>(s.capacity), false}, {"lookups", static_cast<double>(s.lookups)},
                  {"hits", static_cast<double>(s.hits)}, {"misses", static_cast<double>(s.misses)},
                  {"tokens_served", static_cast<double>(s.tokens_served)},
                  {"tokens_recomputed", static_cast<double>(s.tokens_recomputed)},
                  {"evictions", static_cast<double>(s.evictions)}, {"spills", static_cast<double>(s.spills)},
                  {"superseded", static_cast<double>(s.superseded)}, {"replaced", static_cast<double>(s.replaced)}};
    b.cache_tiers.push_back(std::move(ram));
    if (tiers_->cold_enabled()) b.cache_tiers.push_back(SsdTierStats(tiers_->stats()));
    const BatchRunnerStats rs = runner_->stats();
    std::vector<StatValue> kv = BudgetValues(budget_.stats(), rs);
    if (parallel_ > 1) {
      b.batch_values = BatchValues(rs);
      b.batch_values.insert(b.batch_values.end(), kv.begin(), kv.end());
    } else {
      b.engine_values.insert(b.engine_values.end(), kv.begin(), kv.end());  // serial: no batch section
    }
    MutexLock lock(&lanes_mu_);
    b.lanes = lanes_;
    return b;
  }

  // Everything queued for the SSD tier (plus pending write-behinds) durable, within the flush bound.
  Status FlushCache() override {
    return tiers_->Flush(tiers_->env()->MonotonicMicros() + static_cast<int64_t>(flush_timeout_s_ * 1e6));
  }

 private:
  // The chat template's context from `in`, rendered. With `client_text_plain`, every client string in it
  // goes through MarkClientStrings first (for TokenizeChat; the marks would be noise anywhere else).
  StatusOr<std::string> RenderChat(const ChatTemplateInput& in, bool client_text_plain) const {
    const Tokenizer& tok = *engine_->tokenizer();
    const std::string& tmpl = Template();
    if (tmpl.empty()) return FailedPrecondition("the model has no chat template (tokenizer.chat_template)");
    ordered_json ctx = {{"messages", MessagesJson(in.messages)}, {"add_generation_prompt", in.add_generation_prompt},
                        {"bos_token", tok.bos() >= 0 ? std::string(tok.TokenToPiece(tok.bos(), true)) : ""},
                        {"eos_token", tok.eos() >= 0 ? std::string(tok.TokenToPiece(tok.eos(), true)) : ""}};
    if (!in.tools.empty()) {
      ordered_json tools = ordered_json::array();
      for (const ToolSpec& t : in.tools)
        tools.push_back({{"type", "function"},
                         {"function", {{"name", t.name}, {"description", t.description},
                                       {"parameters", ParsedOrText(t.parameters_json)}}}});
      ctx["tools"] = tools;
    }
    for (const auto& [name, value] : in.kwargs_json) ctx[name] = ParsedOrText(value);
    if (client_text_plain) {
      MarkClientStrings(tok, ctx["messages"]);
      if (ctx.contains("tools")) MarkClientStrings(tok, ctx["tools"]);
      for (const auto& kw : in.kwargs_json) MarkClientStrings(tok, ctx[kw.first]);  // also one named bos_token
    }
    StatusOr<std::string> prompt = RenderChatTemplate(tmpl, ctx);
    // A render limit (template/limits.h) is hit by what the request holds: a 400 naming the limit, not
    // the 429 a ResourceExhausted would map to (retrying cannot help).
    if (!prompt.ok() && prompt.status().code() == StatusCode::kResourceExhausted) {
      return InvalidArgument("chat template: " + prompt.status().message());
    }
    return prompt;
  }

  static CacheTierStats SsdTierStats(const TieredStats& t) {
    // Any arithmetic value (uint64 counters, double rates) reported as a double.
    auto gauge = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), false}; };
    auto counter = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), true}; };
    CacheTierStats ssd;
    ssd.tier = "ssd";
    ssd.values = {gauge("entries", t.entries), gauge("bytes", t.bytes),
                  gauge("cap", t.cap), counter("lookups", t.store.lookups),
                  counter("hits", t.store.hits),
                  counter("misses", t.store.lookups - t.store.hits),
                  counter("tokens_served", t.tokens_served),
                  counter("tokens_recomputed", t.tokens_recomputed),
                  counter("restores", t.store.restores),
                  counter("restore_failures", t.store.restore_failures),
                  counter("restore_chosen", t.restore_chosen),
                  counter("recompute_chosen", t.recompute_chosen),
                  counter("spills", t.store.spills),
                  counter("spill_failures", t.store.spill_failures),
                  counter("no_space", t.store.no_space),
                  counter("dropped_spills", t.queue.dropped),
                  counter("demotions", t.demotions),
                  counter("evictions", t.store.evictions),
                  counter("superseded", t.store.superseded),
                  counter("relief_writes", t.relief_writes),
                  counter("relief_freed", t.relief_freed),
                  counter("shrink_freed", t.shrink_freed),
                  counter("corrupt_deleted", t.store.corrupt_deleted),
                  gauge("write_queue_bytes", t.queue.queued_bytes),
                  gauge("write_queue_jobs", t.queue.queued_jobs),
                  gauge("last_durable_flush_unix_s", t.last_flush_unix_s),
                  gauge("read_bytes_per_s", t.read_bytes_per_s),
                  gauge("prefill_tokens_per_s", t.prefill_tokens_per_s)};
    HistogramValue h;
    h.name = "restore_ms";
    h.upper_bounds = t.restore_ms.bounds;
    uint64_t cum = 0;
    for (uint64_t c : t.restore_ms.counts) h.cumulative_counts.push_back(cum += c);
    h.count = t.restore_ms.count;
    h.sum = t.restore_ms.sum;
    ssd.histograms.push_back(std::move(h));
    return ssd;
  }

  static std::vector<StatValue> BatchValues(const BatchRunnerStats& s) {
    auto gauge = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), false}; };
    auto counter = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), true}; };
    const double steps = static_cast<double>(s.steps);
    return {gauge("max_seqs", s.max_seqs), gauge("running", s.running), gauge("prefilling", s.prefilling),
            gauge("decoding", s.decoding), gauge("waiting", s.waiting), counter("steps", s.steps),
            counter("step_rows", s.step_rows), counter("decode_rows", s.decode_rows),
            counter("prompt_rows", s.prompt_rows),
            gauge("tokens_per_step", steps > 0 ? static_cast<double>(s.step_rows) / steps : 0.0),
            counter("step_seconds", s.step_seconds), gauge("last_step_ms", s.last_step_ms),
            gauge("occupancy", steps > 0 && s.max_seqs > 0
                                   ? static_cast<double>(s.occupancy_sum) / steps / s.max_seqs : 0.0),
            counter("shared_tokens", s.shared_tokens), counter("completed", s.completed),
            counter("failed", s.failed), counter("cancelled", s.cancelled)};
  }

  // The budget's arithmetic is KvBudget's, its admissions the runner's (its queue is the only one).
  static std::vector<StatValue> BudgetValues(const KvBudgetStats& s, const BatchRunnerStats& r) {
    auto gauge = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), false}; };
    auto counter = [](const char* n, auto v) { return StatValue{n, static_cast<double>(v), true}; };
    return {gauge("kv_budget_bytes", s.budget_bytes), gauge("kv_reserved_bytes", r.kv_reserved_bytes),
            gauge("kv_cache_bytes", s.cache_bytes), gauge("kv_reservations", r.kv_reservations),
            counter("kv_admitted", r.kv_admitted), counter("kv_deferred", r.admission_waits),
            counter("kv_cache_shrinks", s.shrinks)};
  }

  void NoteLane(int32_t lane, const SessionResult& r) {
    if (lane < 0 || lane >= std::max(parallel_, 1)) return;  // lanes_ has max(parallel_, 1) entries
    MutexLock lock(&lanes_mu_);
    LaneStats& l = lanes_[static_cast<size_t>(lane)];
    ++l.requests;
    if (r.cached_tokens > 0) ++l.cache_hits;
    l.prompt_tokens += static_cast<uint64_t>(r.prompt_tokens);
    l.cached_tokens += static_cast<uint64_t>(r.cached_tokens);
  }

  // Destruction order matters: the sessions and the runner go before the budget, cache and engine.
  std::unique_ptr<Engine> engine_;
  size_t max_token_bytes_ = 0;  // max_token_bytes(), from the vocabulary at load
  std::unique_ptr<Engine> draft_;  // --draft-model (null without)
  SpeculativeOptions spec_;
  std::atomic<uint64_t> draft_tokens_{0}, draft_accepted_{0}, decode_tokens_{0}, decode_us_{0};
  std::atomic<uint64_t> checkpoints_{0};  // hybrid recurrent-state checkpoints the sessions stored
  std::unique_ptr<TieredCache> tiers_;
  std::string id_;
  double flush_timeout_s_;
  const int parallel_;
  KvBudget budget_;
  mutable Mutex lanes_mu_;
  std::vector<LaneStats> lanes_ GUARDED_BY(lanes_mu_);
  Mutex vocab_mu_;
  std::shared_ptr<const grammar::Vocabulary> vocab_ GUARDED_BY(vocab_mu_);
  std::unique_ptr<BatchRunner> runner_;
  std::unique_ptr<BatchedSession> batched_;
  std::string template_override_;  // --chat-template-file; "" = the model's own
};


// --parallel, --step-tokens and --kv-budget checked against the loaded engine, with the default budget
// filled in; prints the "ember: ..." lines that say what is in effect.
StatusOr<BatchConfig> BatchConfigFor(const ServeOptions& o, const Engine& engine) {
  BatchConfig c;
  if (o.parallel < 1 || o.parallel > kMaxParallel) {
    return InvalidArgument("--parallel " + std::to_string(o.parallel) + ": must be 1 (serial) to " +
                           std::to_string(kMaxParallel));
  }
  const int64_t ubatch = engine.options().ubatch;
  if (o.step_tokens < kMinStepTokens || o.step_tokens > ubatch) {
    return InvalidArgument("--step-tokens " + std::to_string(o.step_tokens) + ": must be " +
                           std::to_string(kMinStepTokens) + " to " + std::to_string(ubatch) +
                           " (the engine's ubatch: rows one forward pass holds)");
  }
  if (!(o.step_ms >= 0 && o.step_ms <= 10000)) {
    return InvalidArgument("--step-ms " + std::to_string(o.step_ms) + ": must be 0 (rows only) to 10000");
  }
  c.parallel = o.parallel;
  c.step_tokens = o.step_tokens;
  c.step_ms = o.step_ms;
  if (o.checkpoint_every < 0) {
    return InvalidArgument("--checkpoint-every " + std::to_string(o.checkpoint_every) + ": must be 0 (off) or more");
  }
  c.checkpoint_every = o.checkpoint_every;
  EMBER_ASSIGN_OR_RETURN(c.spec.mode, ParseSpecMode(o.spec));
  c.spec.draft_max = o.draft_max;
  c.spec.ngram_min = o.draft_ngram_min;
  c.spec.ngram_max = o.draft_ngram_max;
  if (c.spec.mode == SpecMode::kDraft && o.draft_model_path.empty()) {
    return InvalidArgument("--spec draft needs --draft-model PATH");
  }
  if (c.spec.mode != SpecMode::kDraft && !o.draft_model_path.empty()) {
    return InvalidArgument("--draft-model is used only with --spec draft (got --spec " + o.spec + ")");
  }
  const uint64_t weights = engine.model().gguf().file_size();
  std::string how = "--kv-budget";
  if (o.kv_budget.empty()) {
    c.kv_budget_bytes = DefaultKvBudgetBytes(weights, &how);
  } else {
    EMBER_ASSIGN_OR_RETURN(size_t b, ParseByteSize(o.kv_budget));
    if (b == 0) return InvalidArgument("--kv-budget " + o.kv_budget + ": the KV budget must be above 0 (omit it for "
                                       "the default, derived from free RAM)");
    c.kv_budget_bytes = b;
  }
  const uint64_t per_pos = KvBytesPerPosition(engine.kv_config());
  std::fprintf(stderr, "ember: KV budget %s (%s): %llu positions at %llu bytes each, prompt cache included\n",
               FormatBytes(c.kv_budget_bytes).c_str(), how.c_str(),
               static_cast<unsigned long long>(per_pos > 0 ? c.kv_budget_bytes / per_pos : 0),
               static_cast<unsigned long long>(per_pos));
  if (c.parallel == 1) {
    std::fprintf(stderr, "ember: parallel 1: one generation at a time (a batch of one)\n");
  } else {
    std::fprintf(stderr, "ember: parallel %d sequences per step, step tokens %lld, step target %s\n", c.parallel,
                 static_cast<long long>(c.step_tokens),
                 c.step_ms > 0 ? (std::to_string(static_cast<int>(c.step_ms)) + " ms").c_str() : "off");
  }
  return c;
}

}  // namespace

StatusOr<std::unique_ptr<InferenceBackend>> CreateEngineBackend(const ServeOptions& options) {
  // Bars for loading and hashing (a terminal only; the CLI decides).
  const ProgressBar::Options bar{.enabled = options.progress, .unit = ProgressBar::Unit::kBytes};
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, LoadEngineWithProgress(options.model_path, [&] {
    EngineOptions eo;
    eo.threads = options.threads;
    eo.n_ctx = options.ctx_size;  // 0: the engine's default
    return eo;
  }(), bar));
  if (engine->tokenizer() == nullptr) return FailedPrecondition(options.model_path + ": the model has no tokenizer");
  if (const WeightPages& wp = engine->weight_pages(); wp.bytes > 0) {  // decode speed depends on it
    const uint64_t packed = engine->model().packed().bytes();
    const std::string repacked =
        packed > 0 ? std::to_string(packed / 1000000) + " MB repacked for the packed GEMM kernels, " : std::string();
    std::fprintf(stderr, "ember: weights %s%.0f MB mapped from the file, %.0f%% of those on 2 MiB pages%s\n",
                 repacked.c_str(), static_cast<double>(wp.bytes) / 1e6,
                 100.0 * static_cast<double>(wp.huge_bytes) / static_cast<double>(wp.bytes),
                 wp.reread ? " (re-read from the file once to get them)" : "");
  }
  EMBER_ASSIGN_OR_RETURN(BatchConfig batch, BatchConfigFor(options, *engine));
  std::unique_ptr<Engine> draft;
  if (batch.spec.mode == SpecMode::kDraft) {
    EngineOptions eo;
    eo.threads = options.threads;
    eo.n_ctx = engine->options().n_ctx;
    StatusOr<std::unique_ptr<Engine>> d = LoadEngineWithProgress(options.draft_model_path, eo, bar);
    if (!d.ok()) return InvalidArgument("--draft-model " + options.draft_model_path + ": " + d.status().ToString());
    draft = std::move(*d);
    EMBER_RETURN_IF_ERROR(CheckDraftModel(*engine, *draft));
    batch.spec.draft_engine = draft.get();
  }
  if (Status st = batch.spec.Validate(); !st.ok()) return InvalidArgument("--spec/--draft-*: " + st.message());
  if (batch.spec.enabled()) {
    std::fprintf(stderr, "ember: speculative decoding %s, up to %d drafted tokens per verification\n",
                 SpecModeName(batch.spec.mode), MaxDraftTokens(*engine, batch.spec.draft_max));
  }
  size_t cache_bytes = DefaultPromptCacheBytes();
  if (!options.prompt_cache_bytes.empty()) {
    EMBER_ASSIGN_OR_RETURN(cache_bytes, ParseByteSize(options.prompt_cache_bytes));
  }
  // Cache residency counts against the KV budget: a cap above it could never be used.
  const bool clamped = cache_bytes > batch.kv_budget_bytes;
  if (clamped) cache_bytes = batch.kv_budget_bytes;
  std::fprintf(stderr, "ember: prompt cache %s in RAM%s\n", FormatBytes(cache_bytes).c_str(),
               cache_bytes == 0 ? " (off)" : clamped ? " (clamped to the KV budget)" : "");
  TieredCacheOptions to;
  to.ram_bytes = cache_bytes;
  // An unusable cache directory (another user's, writable by others, in use by another server of this
  // model, a file in the way) costs the SSD tier, never the server.
  auto ssd_off = [](const Status& why) {
    std::fprintf(stderr, "ember: warning: ssd cache disabled: %s; serving with the RAM tier only\n",
                 why.message().c_str());
  };
  Env& env = *PosixEnv::Default();
  CacheIdentity ident;
  uint64_t disk_cap_bytes = 32ull << 30;
  // A bad flag is an error whether or not the directory turns out usable.
  if (!options.ssd_cache_dir.empty() && !options.ssd_cache_bytes.empty()) {
    EMBER_ASSIGN_OR_RETURN(disk_cap_bytes, ParseByteSize(options.ssd_cache_bytes));
  }
  if (!options.ssd_cache_dir.empty()) {
    // Checked before anything in it is read: the weights-fingerprint memo there decides the identity.
    if (Status safe = EnsurePrivateDir(env, options.ssd_cache_dir, DirRole::kRoot); !safe.ok()) {
      ssd_off(safe);
    } else {
      to.root = options.ssd_cache_dir;
      to.kv = engine->kv_config();
      to.disk_cap_bytes = disk_cap_bytes;
      to.verify_tensors = options.ssd_cache_verify;
      to.demote_idle_s = options.ssd_demote_idle_s;
      const Stopwatch ident_time(&env);
      ProgressBar hashing("hashing weights (once per model file)", 0, bar);
      ident = ComputeCacheIdentity(env, to.root, options.model_path, engine->model().gguf(), to.kv,
                                   hashing.Callback());
      hashing.Finish();
      to.identity = ident.dir_name;
      const double ident_s = ident_time.ElapsedSeconds();
      std::fprintf(stderr, "ember: ssd cache %s/%s, cap %s (identity %.2f s)\n", to.root.c_str(),
                   to.identity.c_str(),
                   to.disk_cap_bytes == 0 ? "unlimited" : FormatBytes(to.disk_cap_bytes).c_str(), ident_s);
    }
  }
  const Stopwatch scan_time(&env);
  const size_t ram_bytes = to.ram_bytes;
  const std::string root = to.root;
  StatusOr<std::unique_ptr<TieredCache>> opened = TieredCache::Open(std::move(to));
  if (!opened.ok()) {
    ssd_off(opened.status());
    TieredCacheOptions ram_only;
    ram_only.ram_bytes = ram_bytes;
    opened = TieredCache::Open(std::move(ram_only));
  }
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<TieredCache> tiers, std::move(opened));
  if (tiers->cold_enabled()) {
    WriteIdentityFile(env, root, ident);  // only once the identity directory is locked as ours
    const TieredStats st = tiers->stats();
    std::fprintf(stderr, "ember: ssd cache scan: %zu entries, %s, %llu corrupt deleted (%.3f s)\n", st.entries,
                 FormatBytes(st.bytes).c_str(), static_cast<unsigned long long>(st.store.corrupt_deleted),
                 scan_time.ElapsedSeconds());
  } else {
    std::fprintf(stderr, "ember: ssd cache off\n");
  }
  std::string id = options.model_alias.empty() ? std::filesystem::path(options.model_path).stem().string()
                                               : options.model_alias;
  auto backend =
      std::make_unique<EngineBackend>(std::move(engine), std::move(draft), std::move(tiers), std::move(id),
                                      options.ssd_flush_timeout_s, batch);
  if (!options.chat_template_file.empty()) {
    std::ifstream in(options.chat_template_file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return IoError("cannot read --chat-template-file " + options.chat_template_file);
    if (text.empty()) return InvalidArgument("--chat-template-file " + options.chat_template_file + " is empty or unreadable");
    backend->set_chat_template(std::move(text));
  }
  return std::unique_ptr<InferenceBackend>(std::move(backend));
}

}  // namespace ember::server
