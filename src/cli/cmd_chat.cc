// ember chat: an interactive multi-turn terminal chat through the prompt cache. Each turn renders the
// whole conversation with the model's chat template, so the prompt cache is what makes turn N cost only
// its new tokens; the line after each reply shows how many tokens came from the cache.
#include <chrono>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/cache_namespace.h"
#include "cache/cache_options.h"
#include "session/cached_session.h"
#include "cli/command.h"
#include "engine/engine.h"
#include "engine/load_progress.h"
#include "template/chat_template.h"

namespace ember::cli {
namespace {

struct Args {
  std::string model, system, cache_bytes;
  int64_t max_tokens = 512, ctx = 0;
  float temperature = 0.7f;
  uint64_t seed = 0;
  int threads = 0;
};

// The conversation and how it becomes token ids.
struct Chat {
  const Tokenizer* tok = nullptr;
  std::string tmpl, bos, eos;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();

  StatusOr<std::vector<int32_t>> Prompt() const {
    std::string text;
    if (tmpl.empty()) {
      // No template in the file: a plain transcript (generated test models have none).
      for (const auto& m : messages) text += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
      text += "assistant:";
    } else {
      nlohmann::ordered_json ctx = {{"messages", messages}, {"add_generation_prompt", true},
                                    {"bos_token", bos}, {"eos_token", eos}};
      ChatTemplateOptions opts;
      opts.env = Env::Default();  // the CLI is the edge: real time is wanted
      EMBER_ASSIGN_OR_RETURN(text, RenderChatTemplate(tmpl, ctx, opts));
    }
    // Templates usually write the BOS text themselves; add it only when they did not.
    const bool add_bos = bos.empty() || text.rfind(bos, 0) != 0;
    return tok->Encode(text, add_bos, /*parse_special=*/true);
  }
};

Status Turn(Engine& engine, CachedSession& session, Chat& chat, const Args& a, const std::string& ns) {
  EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, chat.Prompt());
  if (static_cast<int64_t>(prompt.size()) + a.max_tokens > engine.options().n_ctx) {
    return ResourceExhausted("the conversation (" + std::to_string(prompt.size()) +
                             " tokens) no longer fits the context; /reset to start over");
  }
  SessionRequest req;
  req.prompt = std::move(prompt);
  req.ns = ns;
  req.generate.max_tokens = a.max_tokens;
  req.generate.sampling.temperature = a.temperature;
  req.generate.sampling.seed = a.seed;
  StreamingDetokenizer detok(*chat.tok);
  EMBER_ASSIGN_OR_RETURN(SessionResult r, session.Generate(req, [&](int32_t id) {
    if (!chat.tok->IsEog(id)) std::cout << detok.Push(id) << std::flush;
    return true;
  }));
  std::cout << detok.Flush() << "\n";
  std::vector<int32_t> reply = r.gen.tokens;
  if (!reply.empty() && chat.tok->IsEog(reply.back())) reply.pop_back();
  chat.messages.push_back({{"role", "assistant"}, {"content", chat.tok->Decode(reply, false)}});
  const double tps = r.gen.decode_s > 0 ? static_cast<double>(r.gen.decode_tokens) / r.gen.decode_s : 0;
  std::fprintf(stderr, "[cached %lld | prefilled %lld | TTFT %.1f ms | decode %.1f tok/s]\n",
               static_cast<long long>(r.cached_tokens), static_cast<long long>(r.prefilled_tokens),
               r.ttft_s * 1e3, tps);
  return Status::Ok();
}

void PrintStats(const PromptCache& cache) {
  const PromptCacheStats s = cache.stats();
  std::fprintf(stderr, "[cache: %zu entries, %s of %s, %llu hits / %llu lookups, %llu tokens served, %llu recomputed]\n",
               s.entries, FormatBytes(s.bytes).c_str(), FormatBytes(s.capacity).c_str(),
               static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.lookups),
               static_cast<unsigned long long>(s.tokens_served), static_cast<unsigned long long>(s.tokens_recomputed));
}

Status Run(const Args& a) {
  size_t cap = DefaultPromptCacheBytes();
  if (!a.cache_bytes.empty()) {
    EMBER_ASSIGN_OR_RETURN(cap, ParseByteSize(a.cache_bytes));
  }
  EngineOptions eo;
  eo.threads = a.threads;
  eo.n_ctx = a.ctx;
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadEngineWithProgress(a.model, eo, {.enabled = ShowProgress()}));
  PromptCache cache(PromptCacheOptions{cap, nullptr});
  CachedSession session(*engine, &cache);
  Chat chat;
  chat.tok = engine->tokenizer();
  if (auto t = engine->model().gguf().Str("tokenizer.chat_template"); t.ok()) chat.tmpl = *t;
  if (chat.tok->bos() >= 0) chat.bos = std::string(chat.tok->TokenToPiece(chat.tok->bos(), true));
  if (chat.tok->eos() >= 0) chat.eos = std::string(chat.tok->TokenToPiece(chat.tok->eos(), true));
  if (!a.system.empty()) chat.messages.push_back({{"role", "system"}, {"content", a.system}});
  std::fprintf(stderr, "ember chat: %s, %d threads, context %lld, prompt cache %s%s\n"
               "commands: /stats /reset /quit\n", a.model.c_str(), engine->threads(),
               static_cast<long long>(engine->options().n_ctx), cap == 0 ? "off" : FormatBytes(cap).c_str(),
               chat.tmpl.empty() ? " (no chat template: plain transcript)" : "");
  const std::string ns = CacheNamespace{}.Key();
  std::string line;
  while (std::cout << "> " << std::flush, std::getline(std::cin, line)) {
    if (line == "/quit" || line == "/exit") break;
    if (line == "/stats") { PrintStats(cache); continue; }
    if (line == "/reset") {
      chat.messages.erase(chat.messages.begin() + (a.system.empty() ? 0 : 1), chat.messages.end());
      continue;
    }
    if (line.empty()) continue;
    chat.messages.push_back({{"role", "user"}, {"content", line}});
    Status st = Turn(*engine, session, chat, a, ns);
    if (!st.ok()) {
      chat.messages.erase(chat.messages.end() - 1);
      std::cerr << "ember chat: " << st.ToString() << "\n";
    }
  }
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("chat", "Interactive multi-turn chat in the terminal, through the prompt cache");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("--system", a->system, "System prompt");
  c->add_option("--max-tokens", a->max_tokens, "Tokens per reply at most")->capture_default_str();
  c->add_option("--temp", a->temperature, "Sampling temperature (0: greedy)")->capture_default_str();
  c->add_option("--seed", a->seed, "Sampling seed")->capture_default_str();
  c->add_option("--ctx", a->ctx, "Context length (default: the model's, at most 32768)");
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--prompt-cache-bytes", a->cache_bytes, "Prompt cache RAM cap, e.g. 8G; 0 = off (default: a quarter of RAM)");
  c->callback([a, set_exit] {
    Status st = Run(*a);
    if (!st.ok()) std::cerr << "ember chat: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("chat", Setup);

}  // namespace
}  // namespace ember::cli
