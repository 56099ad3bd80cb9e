// The real engine behind the HTTP layer: Engine (model, tokenizer, forward pass) + the RAM prompt cache
// through CachedSession. Generate() runs on the scheduler's single generation lane; the other methods
// only read immutable state (tokenizer, parsed template) or take the cache's own lock.
#include "server/engine_backend.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cache/cache_namespace.h"
#include "cache/cache_options.h"
#include "cache/cached_session.h"
#include "cache/prompt_cache.h"
#include "engine/engine.h"
#include "template/chat_template.h"

namespace ember::server {
namespace {

using nlohmann::ordered_json;

// Arguments arrive as JSON text; templates expect an object (they iterate it or print it with tojson).
ordered_json ParsedOrText(const std::string& text) {
  ordered_json j = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? ordered_json(text) : j;
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
    out.push_back(std::move(j));
  }
  return out;
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
  p.seed = s.seed ? *s.seed : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (const auto& [id, bias] : s.logit_bias) p.logit_bias[id] = bias;
  return p;
}

class EngineBackend final : public InferenceBackend {
 public:
  EngineBackend(std::unique_ptr<Engine> engine, size_t cache_bytes, std::string id)
      : engine_(std::move(engine)), cache_(PromptCacheOptions{cache_bytes, nullptr}), id_(std::move(id)),
        session_(*engine_, &cache_) {}

  std::string model_id() const override { return id_; }
  int32_t context_length() const override { return static_cast<int32_t>(engine_->options().n_ctx); }

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

  StatusOr<std::string> ApplyChatTemplate(const ChatTemplateInput& in) const override {
    const Tokenizer& tok = *engine_->tokenizer();
    const std::string& tmpl = tok.spec().chat_template;
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
    return RenderChatTemplate(tmpl, ctx);
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
    const Tokenizer& tok = *engine_->tokenizer();
    auto cb = [&](int32_t id) {
      if (tok.IsEog(id)) return true;  // the engine ends on it; the server never sees stop tokens
      TokenEvent ev;
      ev.id = id;
      ev.piece = std::string(tok.TokenToPiece(id, /*render_special=*/false));
      return on_token(ev);
    };
    auto r = session_.Generate(sr, cb);
    if (!r.ok()) return r.status();
    out->cached_tokens = static_cast<int32_t>(r->cached_tokens);
    out->cache_tier = r->cached_tokens > 0 ? "ram" : "none";
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
    return Status::Ok();
  }

  BackendStats Stats() const override {
    const PromptCacheStats s = cache_.stats();
    BackendStats b;
    b.engine_values = {{"threads", static_cast<double>(engine_->threads()), false},
                       {"context_length", static_cast<double>(engine_->options().n_ctx), false}};
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
    return b;
  }

  // No cold tier is wired in yet, so there is nothing to make durable.
  Status FlushCache() override { return Status::Ok(); }

 private:
  std::unique_ptr<Engine> engine_;
  PromptCache cache_;
  std::string id_;
  CachedSession session_;
};

}  // namespace

StatusOr<std::unique_ptr<InferenceBackend>> CreateEngineBackend(const ServeOptions& options) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Load(options.model_path, EngineOptions{}));
  if (engine->tokenizer() == nullptr) return FailedPrecondition(options.model_path + ": the model has no tokenizer");
  size_t cache_bytes = DefaultPromptCacheBytes();
  if (!options.prompt_cache_bytes.empty()) {
    EMBER_ASSIGN_OR_RETURN(cache_bytes, ParseByteSize(options.prompt_cache_bytes));
  }
  std::fprintf(stderr, "ember: prompt cache %s in RAM%s\n", FormatBytes(cache_bytes).c_str(),
               cache_bytes == 0 ? " (off)" : "");
  std::string id = options.model_alias.empty() ? std::filesystem::path(options.model_path).stem().string()
                                               : options.model_alias;
  return std::unique_ptr<InferenceBackend>(new EngineBackend(std::move(engine), cache_bytes, std::move(id)));
}

}  // namespace ember::server
