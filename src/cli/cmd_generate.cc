// ember generate: stream a completion to stdout; timings (prefill / decode tok/s, time to first
// token, load time) to stderr at the end.
#include <csignal>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/drafter.h"
#include "engine/engine.h"
#include "engine/load_progress.h"
#include "template/chat_template.h"
#include "util/stopwatch.h"

namespace ember::cli {
namespace {

struct Args {
  std::string model, prompt, kv = "f16", system;
  std::string spec = "off", draft_model;
  int draft_max = 8, ngram_min = 2, ngram_max = 4;
  bool spec_given = false;  // --spec on the command line (else --draft-model implies draft)
  bool chat = false, json = false;
  int64_t n = 128, ubatch = 512;
  int threads = 0;
  SamplerParams sp;
};

std::atomic<bool> g_cancel{false};
void OnSigint(int) { g_cancel.store(true); }

StatusOr<std::vector<int32_t>> BuildPrompt(const Engine& e, const Args& a) {
  const Tokenizer& tok = *e.tokenizer();
  if (!a.chat) return tok.Encode(a.prompt, /*add_special=*/true, /*parse_special=*/false);
  const std::string& tmpl = tok.spec().chat_template;
  if (tmpl.empty()) return InvalidArgument("--chat: the model has no tokenizer.chat_template");
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  if (!a.system.empty()) msgs.push_back({{"role", "system"}, {"content", a.system}});
  msgs.push_back({{"role", "user"}, {"content", a.prompt}});
  nlohmann::ordered_json ctx = {{"messages", msgs}, {"add_generation_prompt", true},
                                {"bos_token", tok.bos() >= 0 ? std::string(tok.TokenToPiece(tok.bos(), true)) : ""},
                                {"eos_token", tok.eos() >= 0 ? std::string(tok.TokenToPiece(tok.eos(), true)) : ""}};
  EMBER_ASSIGN_OR_RETURN(std::string text, RenderChatTemplate(tmpl, ctx));
  // The template writes BOS itself when the model wants one; control tokens in it are parsed.
  return tok.Encode(text, /*add_special=*/false, /*parse_special=*/true);
}

StatusOr<KvDtype> ParseKv(const std::string& s) {
  if (s == "f16") return KvDtype::kF16;
  if (s == "f32") return KvDtype::kF32;
  return InvalidArgument("--kv must be f16 or f32, got '" + s + "'");
}

Status Run(const Args& a) {
  const Stopwatch t_start;
  EngineOptions eo;
  eo.threads = a.threads;
  eo.ubatch = a.ubatch;
  EMBER_ASSIGN_OR_RETURN(eo.kv_dtype, ParseKv(a.kv));
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadEngineWithProgress(a.model, eo, {.enabled = ShowProgress(a.json)}));
  const double load_s = t_start.ElapsedSeconds();
  EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, BuildPrompt(*engine, a));
  if (prompt.empty()) return InvalidArgument("the prompt tokenized to nothing");
  EMBER_ASSIGN_OR_RETURN(auto seq, engine->NewSequence());
  GenerateOptions go;
  EMBER_ASSIGN_OR_RETURN(go.speculative.mode, ParseSpecMode(a.spec));
  if (!a.draft_model.empty() && !a.spec_given) go.speculative.mode = SpecMode::kDraft;
  go.speculative.draft_max = a.draft_max;
  go.speculative.ngram_min = a.ngram_min;
  go.speculative.ngram_max = a.ngram_max;
  std::unique_ptr<Engine> draft;
  if (go.speculative.mode == SpecMode::kDraft) {
    if (a.draft_model.empty()) return InvalidArgument("--spec draft needs --draft-model PATH");
    EMBER_ASSIGN_OR_RETURN(draft, LoadEngineWithProgress(a.draft_model, eo, {.enabled = ShowProgress(a.json)}));
    EMBER_RETURN_IF_ERROR(CheckDraftModel(*engine, *draft));
    go.speculative.draft_engine = draft.get();
  }
  EMBER_RETURN_IF_ERROR(go.speculative.Validate());
  go.max_tokens = a.n;
  go.sampling = a.sp;
  go.ubatch = a.ubatch;
  go.cancel = &g_cancel;
  StreamingDetokenizer detok(*engine->tokenizer());
  std::string text;
  double first_token_s = 0;
  auto on_token = [&](int32_t t) {
    if (first_token_s == 0) {
      first_token_s = t_start.ElapsedSeconds();
    }
    if (engine->tokenizer()->IsEog(t)) return true;
    const std::string piece = detok.Push(t);
    if (a.json) {
      text += piece;
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  std::signal(SIGINT, OnSigint);
  EMBER_ASSIGN_OR_RETURN(GenerateResult r, engine->Generate(*seq, prompt, go, on_token));
  std::signal(SIGINT, SIG_DFL);
  const std::string tail = detok.Flush();
  const double pp = r.prefill_s > 0 ? r.prompt_tokens / r.prefill_s : 0;
  const double tg = r.decode_s > 0 ? r.decode_tokens / r.decode_s : 0;
  if (a.json) {
    nlohmann::json j = {{"model", a.model}, {"text", text + tail}, {"tokens", r.tokens},
                        {"prompt_tokens", r.prompt_tokens}, {"stop", StopReasonName(r.stop)},
                        {"prefill_tok_s", pp}, {"decode_tok_s", tg}, {"ttft_s", r.ttft_s},
                        {"first_token_since_launch_s", first_token_s}, {"load_s", load_s},
                        {"threads", engine->threads()}, {"spec", SpecModeName(go.speculative.mode)},
                        {"draft_tokens", r.draft_tokens}, {"draft_accepted", r.draft_accepted}};
    std::cout << j.dump() << "\n";
  } else {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::cout << std::endl;
  }
  std::fprintf(stderr,
               "\n[ember] prompt %lld tok, prefill %.1f tok/s | %lld tok decoded, %.1f tok/s | ttft %.3f s "
               "(first token %.3f s after launch, load %.3f s) | stop: %s | threads %d\n",
               static_cast<long long>(r.prompt_tokens), pp, static_cast<long long>(r.decode_tokens), tg, r.ttft_s,
               first_token_s, load_s, StopReasonName(r.stop), engine->threads());
  if (go.speculative.enabled()) {
    std::fprintf(stderr, "[ember] speculative %s: %lld drafted, %lld accepted (%.0f %%)\n",
                 SpecModeName(go.speculative.mode), static_cast<long long>(r.draft_tokens),
                 static_cast<long long>(r.draft_accepted),
                 r.draft_tokens > 0 ? 100.0 * static_cast<double>(r.draft_accepted) / static_cast<double>(r.draft_tokens) : 0.0);
  }
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("generate", "Generate text from a prompt, streamed to stdout");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("prompt", a->prompt, "Prompt text")->required();
  c->add_flag("--chat", a->chat, "Wrap the prompt in the model's chat template as a user message");
  c->add_option("--system", a->system, "System message (with --chat)");
  c->add_option("-n,--n-predict", a->n, "Most tokens to generate")->capture_default_str();
  c->add_option("--temp", a->sp.temperature, "Temperature (0: greedy)")->capture_default_str();
  c->add_option("--seed", a->sp.seed, "Sampling seed")->capture_default_str();
  c->add_option("--top-k", a->sp.top_k, "Top-k (0: off)")->capture_default_str();
  c->add_option("--top-p", a->sp.top_p, "Top-p (1: off)")->capture_default_str();
  c->add_option("--min-p", a->sp.min_p, "Min-p (0: off)")->capture_default_str();
  c->add_option("--repeat-penalty", a->sp.repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
  c->add_option("--presence-penalty", a->sp.presence_penalty, "Presence penalty")->capture_default_str();
  c->add_option("--frequency-penalty", a->sp.frequency_penalty, "Frequency penalty")->capture_default_str();
  c->add_option("--repeat-last-n", a->sp.repeat_last_n, "Penalty window (0: off, -1: all)")->capture_default_str();
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--ubatch", a->ubatch, "Prefill chunk size")->capture_default_str();
  c->add_option("--kv", a->kv, "KV cache type: f16 | f32")->capture_default_str();
  c->add_option("--spec", a->spec,
                 "Speculative decoding (lossless; docs/speculative.md): off | ngram (prompt lookup) | draft "
                 "(--draft-model)")
      ->capture_default_str();
  c->add_option("--draft-model", a->draft_model,
                 "Draft model (the target's vocabulary); implies --spec draft unless --spec is given");
  c->add_option("--draft-max", a->draft_max, "Most tokens drafted per verification (1..32)")->capture_default_str();
  c->add_option("--draft-ngram-min", a->ngram_min, "Prompt lookup: shortest tail n-gram that may match")
      ->capture_default_str();
  c->add_option("--draft-ngram-max", a->ngram_max, "Prompt lookup: longest tail n-gram tried")->capture_default_str();
  c->add_flag("--json", a->json, "Print one JSON object (text, tokens, timings) instead of streaming");
  c->callback([a, c, set_exit] {
    a->spec_given = c->get_option("--spec")->count() > 0;
    Status st = Run(*a);
    if (!st.ok()) std::cerr << "ember generate: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("generate", Setup);

}  // namespace
}  // namespace ember::cli
