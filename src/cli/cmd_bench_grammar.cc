// ember bench-grammar: the flags and the printout of the grammar benchmark (bench/grammar_bench.h).
#include <cstdio>
#include <iostream>

#include "bench/grammar_bench.h"
#include "cli/command.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

int Run(bench::GrammarBenchConfig c, bool as_json) {
  ProgressBar bar("bench-grammar", 0, {.enabled = ShowProgress(as_json)});
  c.progress = &bar;
  auto r = bench::RunGrammarBench(c);
  bar.Finish();
  if (!r.ok()) {
    std::cerr << "ember bench-grammar: " << r.status().ToString() << "\n";
    return 1;
  }
  const nlohmann::json& j = *r;
  if (as_json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  for (const auto& v : j["vocabs"]) {
    std::printf("%s: %d tokens, trie %zu nodes, indexed in %.1f ms\n", v["vocab"].get<std::string>().c_str(),
                v["n_vocab"].get<int>(), v["trie_nodes"].get<size_t>(), v["index_ms"].get<double>());
    std::printf("  mask+accept per token: mean %.1f us, p99 %.1f us over %zu tokens; cached %.1f us; "
                "%zu misses at %.1f us; %lld DFA resets\n",
                v["mask_accept_us_mean"].get<double>(), v["mask_accept_us_p99"].get<double>(),
                v["tokens"].get<size_t>(), v["cached_us_mean"].get<double>(), v["misses"].get<size_t>(),
                v["miss_us_mean"].get<double>(), v["dfa_resets"].get<long long>());
  }
  if (j.contains("decode")) {
    const auto& d = j["decode"];
    std::printf("decode %s: free %.2f tok/s, constrained %.2f tok/s (%.1f%% slower; %lld of %lld masks computed)\n",
                d["model"].get<std::string>().c_str(), d["free"]["decode_tok_s"].get<double>(),
                d["constrained"]["decode_tok_s"].get<double>(), d["slowdown_pct"].get<double>(),
                d["constrained"]["mask_misses"].get<long long>(), d["constrained"]["masks"].get<long long>());
  }
  return 0;
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto c = std::make_shared<bench::GrammarBenchConfig>();
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("bench-grammar", "Grammar-constrained sampling: per-token mask cost per vocabulary, "
                                                  "decode tok/s with and without a JSON grammar");
  cmd->add_option("--vocab", c->vocabs, "GGUF whose vocabulary is measured (vocab-only is enough; repeatable)");
  cmd->add_option("--model", c->model, "Model for the decode comparison");
  cmd->add_option("--grammar", c->grammar_file, "GBNF file (default: a JSON grammar)");
  cmd->add_option("--tokens", c->decode_tokens, "Decode tokens per run")->capture_default_str();
  cmd->add_option("--runs", c->runs, "Decode runs per side (best is reported)")->capture_default_str();
  cmd->add_option("--threads", c->threads, "Engine threads (0: physical cores)")->capture_default_str();
  cmd->add_flag("--json", *as_json, "Print one JSON object");
  cmd->callback([c, as_json, set_exit] { set_exit(Run(*c, *as_json)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("bench-grammar", Setup);

}  // namespace ember::cli
