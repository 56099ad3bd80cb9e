// ember bench-tokenizer MODEL: the flags and the printout of the tokenizer benchmark
// (bench/tokenizer_bench.h: ember's and llama.cpp's tokenizer MB/s on the same generated text).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/tokenizer_bench.h"
#include "cli/command.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

using nlohmann::json;

int Run(bench::TokenizerBenchConfig a, bool as_json) {
  ProgressBar bar("bench-tokenizer", 0, {.enabled = ShowProgress(as_json)});
  a.progress = &bar;
  auto bench = bench::RunTokenizerBench(a);
  bar.Finish();
  if (!bench.ok()) {
    std::cerr << "ember bench-tokenizer: " << bench.status().ToString() << "\n";
    return 1;
  }
  const json& result = *bench;
  if (as_json) {
    std::cout << result.dump() << "\n";
    return 0;
  }
  std::printf("text: %.1f MB mixed (seed %llu), best of %d\n", result["bytes"].get<double>() / 1e6,
              static_cast<unsigned long long>(a.seed), a.runs);
  std::printf("ember      %8.2f MB/s  %10zu tokens\n", result["ember"]["mb_per_s"].get<double>(),
              result["ember"]["n_tokens"].get<size_t>());
  if (!a.no_peer) {
    std::printf("llama.cpp  %8.2f MB/s  %10zu tokens\n", result["llama_cpp"]["mb_per_s"].get<double>(),
                result["llama_cpp"]["n_tokens"].get<size_t>());
    std::printf("ratio      %8.2fx  (token counts %s)\n", result["ratio"].get<double>(),
                result["same_token_count"].get<bool>() ? "equal" : "DIFFER");
  }
  return 0;
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<bench::TokenizerBenchConfig>();
  auto as_json = std::make_shared<bool>(false);
  a->peer.runner_mjs = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
  auto* c = app.add_subcommand("bench-tokenizer", "Tokenizer MB/s, ember and llama.cpp side by side on the same text");
  c->add_option("model", a->model, "GGUF model (vocab-only is enough)")->required();
  c->add_option("--mb", a->mb, "Size of the generated mixed text in MiB")->capture_default_str();
  c->add_option("--runs", a->runs, "Timed runs per side (best is reported)")->capture_default_str();
  c->add_option("--seed", a->seed, "Text generator seed")->capture_default_str();
  c->add_option("--runner", a->peer.runner_mjs, "Path of peers/llamacpp/runner.mjs")->capture_default_str();
  c->add_flag("--special", a->special, "Parse special tokens");
  c->add_flag("--no-peer", a->no_peer, "Measure ember only");
  c->add_flag("--json", *as_json, "Print one JSON object");
  c->callback([a, as_json, set_exit] { set_exit(Run(*a, *as_json)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("bench-tokenizer", Setup);

}  // namespace ember::cli
