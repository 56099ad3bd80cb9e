// ember bench-cache: the scripted multi-turn conversation timed with the prompt cache on and off
// (src/bench/cache_bench.h); `ember bench --cache` forwards here.
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/cache_bench.h"
#include "cache/cache_options.h"
#include "cli/command.h"
#include "engine/engine.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

struct Args {
  std::string model, cache_bytes;
  int threads = 0;
  bool json = false;
  CacheBenchOptions o;
};

Status Run(Args& a) {
  a.o.cache_bytes = DefaultPromptCacheBytes();
  if (!a.cache_bytes.empty()) {
    EMBER_ASSIGN_OR_RETURN(a.o.cache_bytes, ParseByteSize(a.cache_bytes));
  }
  if (a.o.cache_bytes == 0) return InvalidArgument("--prompt-cache-bytes 0 turns the cache off: nothing to compare");
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadCacheBenchEngine(a.model, a.threads, a.o));
  std::cerr << "prompt cache: " << FormatBytes(a.o.cache_bytes) << ", " << engine->threads() << " threads\n";
  ProgressBar bar("bench-cache", 0, {.enabled = ShowProgress(a.json)});
  a.o.progress = &bar;
  StatusOr<std::vector<CacheBenchTurn>> result = RunCacheBench(*engine, a.o);
  bar.Finish();
  EMBER_ASSIGN_OR_RETURN(auto turns, std::move(result));
  if (!a.json) {
    PrintCacheBench(turns, std::cout);
    return Status::Ok();
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : turns) {
    rows.push_back({{"turn", t.turn}, {"prompt_tokens", t.prompt_tokens}, {"cached_tokens", t.cached_tokens},
                    {"prefilled_tokens", t.prefilled_tokens}, {"ttft_on_s", t.ttft_on_s},
                    {"ttft_off_s", t.ttft_off_s}, {"prefill_new_s", t.prefill_new_s},
                    {"decode_tok_s", t.decode_tok_s}, {"cow_bytes_copied", t.cow_bytes_copied}});
  }
  std::cout << nlohmann::json{{"model", a.model}, {"threads", engine->threads()}, {"turns", rows}}.dump() << "\n";
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("bench-cache", "Multi-turn TTFT with the prompt cache on and off, side by side");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("--turns", a->o.turns, "Conversation turns")->capture_default_str();
  c->add_option("--system-tokens", a->o.system_tokens, "System prompt tokens")->capture_default_str();
  c->add_option("--user-tokens", a->o.user_tokens, "New user tokens per turn")->capture_default_str();
  c->add_option("--reply-tokens", a->o.reply_tokens, "Generated tokens per turn")->capture_default_str();
  c->add_option("--prompt-cache-bytes", a->cache_bytes, "RAM cap, e.g. 8G (default: a quarter of RAM)");
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->add_flag("--json", a->json, "Print JSON instead of a table");
  c->callback([a, set_exit] {
    Status st = Run(*a);
    if (!st.ok()) std::cerr << "ember bench-cache: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("bench-cache", Setup);

}  // namespace
}  // namespace ember::cli
