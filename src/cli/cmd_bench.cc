// ember bench: the flags and the printout of the direct benchmark (bench/direct_bench.h: prefill and
// decode throughput, median of reps after a warm-up; peak RSS; decode's weight-read bandwidth against
// this machine's; per-op time; --vs-llamacpp interleaves rounds of the llama.cpp peer — native
// llama-bench, or the node-llama-cpp binding when that is not built, labelled as such — on the same file
// and settings and reports ember ÷ peer, bench/peer_compare.h). --cache and --served run the benchmarks
// of bench/cache_bench.h and bench/served_bench.h instead.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/cache_bench.h"
#include "bench/direct_bench.h"
#include "bench/served_bench.h"
#include "cache/cache_options.h"
#include "cli/command.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

using nlohmann::json;

struct Args {
  std::string model, kv = "f16";
  int64_t pp = 512, tg = 128, ubatch = 512;
  int reps = 5, threads = 0;
  bool json = false, vs_llamacpp = false, cache = false, served = false, markdown = false, no_repack = false,
       no_huge_pages = false;
  std::string peer = "auto", llama_bench;
  int peer_reps = 1;
  int64_t long_pp = 0;
  int turns = 10;
  std::string tokens_file;  // JSON array of prompt ids (overrides --pp)
  std::vector<int> parallel;  // batched decode levels
};

Status Run(const Args& a) {
  bench::DirectBenchConfig c;
  c.model = a.model;
  c.kv = a.kv;
  c.pp = a.pp;
  c.tg = a.tg;
  c.ubatch = a.ubatch;
  c.reps = a.reps;
  c.threads = a.threads;
  c.tokens_file = a.tokens_file;
  c.huge_pages = !a.no_huge_pages;
  c.vs_llamacpp = a.vs_llamacpp || a.markdown;
  c.parallel = a.parallel;
  c.repack = !a.no_repack;
  EMBER_ASSIGN_OR_RETURN(c.peer_mode, bench::ParsePeerMode(a.peer));
  c.llama_bench = a.llama_bench;
  c.build_peer_script = std::string(EMBER_SOURCE_DIR) + "/scripts/build-peer";
  c.peer_reps = a.peer_reps;
  c.long_pp = a.long_pp;
  c.peer.runner_mjs = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
  bench::PeerComparison cmp;
  ProgressBar bar("bench", 0, {.enabled = ShowProgress(a.json || a.markdown)});
  c.progress = &bar;
  StatusOr<json> result = bench::RunDirectBench(c, &cmp);
  bar.Finish();
  EMBER_ASSIGN_OR_RETURN(const json j, std::move(result));
  if (a.json) {
    std::cout << j.dump() << "\n";
    return Status::Ok();
  }
  if (a.markdown) {
    char title[512];
    std::snprintf(title, sizeof title, "%s (%.0f MB of weights)", std::filesystem::path(a.model).filename().c_str(),
                  j["weight_bytes"].get<double>() / 1e6);
    std::cout << bench::ComparisonMarkdown(cmp, title);
    return Status::Ok();
  }
  std::printf("%s  threads %d  kv %s\n", a.model.c_str(), j["threads"].get<int>(), a.kv.c_str());
  std::printf("pp%lld: %.1f tok/s   tg%lld: %.1f tok/s   (median of %d)\n", j["pp_tokens"].get<long long>(),
              j["prefill_tok_s"].get<double>(), static_cast<long long>(a.tg), j["decode_tok_s"].get<double>(), a.reps);
  if (j.contains("long_prefill_tok_s")) {
    std::printf("pp%lld: %.1f tok/s   (median of %d)\n", static_cast<long long>(a.long_pp),
                j["long_prefill_tok_s"].get<double>(), a.reps);
  }
  std::printf("weights %.1f MB, decode reads %.1f GB/s of %.1f GB/s measured (%.0f%%), peak RSS %.1f MB\n",
              j["weight_bytes"].get<double>() / 1e6, j["bandwidth_gbs"].get<double>(), j["machine_read_gbs"].get<double>(),
              100 * j["bandwidth_fraction"].get<double>(), j["peak_rss_bytes"].get<double>() / 1048576.0);
  if (j["active_weight_bytes"].get<double>() < j["weight_bytes"].get<double>()) {
    std::printf("mixture of experts: %.1f M of %.1f M parameters active; %.1f MB of weights active per token, %.1f MB "
                "read per decoded token (measured)\n",
                j["active_params"].get<double>() / 1e6, j["n_params"].get<double>() / 1e6,
                j["active_weight_bytes"].get<double>() / 1e6, j["decode_read_bytes_per_token"].get<double>() / 1e6);
  }
  if (j["packed_tensors"].get<int>() > 0) {
    std::printf("repacked %.1f MB of weights (%d matrices) for the packed GEMM kernels, replacing their mapped pages\n",
                j["packed_bytes"].get<double>() / 1e6, j["packed_tensors"].get<int>());
  }
  // With repacking, the fraction is of the weights still read from the file mapping (the copies are
  // anonymous memory advised for 2 MiB pages themselves).
  std::printf("machine read %.1f GB/s on 4 KiB pages, %.1f GB/s on 2 MiB pages; %s on 2 MiB pages %.0f%%%s\n",
              j["machine_read_4k_gbs"].get<double>(), j["machine_read_2m_gbs"].get<double>(),
              j["packed_tensors"].get<int>() > 0 ? "weights left in the file mapping" : "weights",
              100 * j["weights_huge_fraction"].get<double>(), j["weights_reread"].get<bool>() ? " (re-read at load)" : "");
  for (const char* phase : {"prefill", "decode"}) {
    const json& o = j["ops"][phase];
    const double tot = std::max(1e-12, o["total_s"].get<double>());
    std::printf("%-8s matmul %4.1f%%  attention %4.1f%%  norm %4.1f%%  rope %4.1f%%  other %4.1f%%\n", phase,
                100 * o["matmul_s"].get<double>() / tot, 100 * o["attention_s"].get<double>() / tot,
                100 * o["norm_s"].get<double>() / tot, 100 * o["rope_s"].get<double>() / tot,
                100 * o["other_s"].get<double>() / tot);
  }
  if (a.vs_llamacpp) {
    for (const std::string& line : bench::ComparisonLines(cmp)) std::printf("%s\n", line.c_str());
  }
  if (j.contains("batch_decode")) {
    for (const json& l : j["batch_decode"]) {
      std::printf("batched decode, %2d sequences: %.1f tok/s aggregate", l["sequences"].get<int>(), l["tok_s"].get<double>());
      if (l["ratio_to_one"].is_number()) std::printf(" (%.2fx one sequence)", l["ratio_to_one"].get<double>());
      std::printf("\n");
    }
  }
  return Status::Ok();
}

// `ember bench MODEL --cache`: the cache benchmark of src/bench/cache_bench.h with its default script.
Status RunCacheLeg(const Args& a) {
  CacheBenchOptions o;
  o.cache_bytes = DefaultPromptCacheBytes();
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadCacheBenchEngine(a.model, a.threads, o));
  ProgressBar bar("bench --cache", 0, {.enabled = ShowProgress()});
  o.progress = &bar;
  StatusOr<std::vector<CacheBenchTurn>> result = RunCacheBench(*engine, o);
  bar.Finish();
  EMBER_ASSIGN_OR_RETURN(auto turns, std::move(result));
  PrintCacheBench(turns, std::cout);
  return Status::Ok();
}

std::string SelfBinary() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ember") : p.string();
}

// `ember bench MODEL --served`: direct vs served decode, start -> ready, and a cached conversation's last
// turn vs cold (src/bench/served_bench.h). Every measurement is a fresh child process.
Status RunServedLeg(const Args& a) {
  bench::ServedBenchConfig c;
  c.ember_binary = SelfBinary();
  c.model = a.model;
  c.threads = a.threads;
  c.pp = static_cast<int>(a.pp);
  c.tg = static_cast<int>(a.tg);
  c.rounds = a.reps;
  c.turns = a.turns;
  c.tokens_file = a.tokens_file;  // --tokens-file: the served prompt too
  ProgressBar bar("bench --served", 0, {.enabled = ShowProgress(a.json)});
  c.progress = &bar;
  if (!a.json) c.log = [&bar](const std::string& s) { bar.Log(s); };  // above the bar on a terminal
  StatusOr<bench::ServedBenchResult> result = bench::RunServedBench(c);
  bar.Finish();
  EMBER_ASSIGN_OR_RETURN(bench::ServedBenchResult r, std::move(result));
  if (a.json) {
    json j = r.ToJson();
    j["model"] = a.model;
    j["pp_tokens"] = a.pp;
    j["tg_tokens"] = a.tg;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << a.model << "\n" << r.ToText();
  }
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("bench", "Prefill/decode throughput, bandwidth and per-op time (optionally vs llama.cpp)");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("--pp", a->pp, "Prompt tokens")->capture_default_str();
  c->add_option("--tg", a->tg, "Generated tokens")->capture_default_str();
  c->add_option("--reps", a->reps, "Measured repetitions (after one warm-up)")->capture_default_str();
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--ubatch", a->ubatch, "Prefill chunk size")->capture_default_str();
  c->add_option("--kv", a->kv, "KV cache type: f16 | f32")->capture_default_str();
  c->add_option("--parallel", a->parallel,
                 "Also measure batched decode: for each N (e.g. 1,2,4,8), N sequences decode --tg tokens together "
                 "(continuous batching's step loop); aggregate tok/s")
      ->delimiter(',');
  c->add_flag("--vs-llamacpp", a->vs_llamacpp,
              "Interleave rounds of llama.cpp on the same file, threads and KV type (after a warm-up round) and print "
              "ember / llama.cpp per metric: median ratio and the range of per-round ratios");
  c->add_option("--peer", a->peer,
                "--vs-llamacpp's peer: auto (native llama-bench from scripts/build-peer if built, else the "
                "node-llama-cpp binding, labelled as such: its decode lacks a persistent thread pool, so ratios "
                "against it overstate ember) | native (llama-bench or an error) | binding")
      ->capture_default_str();
  c->add_option("--llama-bench", a->llama_bench,
                "Path of llama-bench (default: the bin folder `scripts/build-peer --print` names; EMBER_PEER_DIR)");
  c->add_option("--peer-reps", a->peer_reps, "llama-bench -r inside each round (its median is the round's)")
      ->capture_default_str();
  c->add_option("--long-pp", a->long_pp,
                "Also measure prefill of this many ids each round, both stacks (e.g. 2048: pp2048); 0: off")
      ->capture_default_str();
  c->add_flag("--markdown", a->markdown,
              "Print the --vs-llamacpp comparison as a Markdown section (scripts/bench-results builds "
              "bench/RESULTS.md from these)");
  c->add_flag("--cache", a->cache,
              "Instead: the scripted 10-turn conversation, TTFT per turn with the prompt cache on and off "
              "(the same as `ember bench-cache MODEL` with its defaults)");
  c->add_flag("--served", a->served,
              "Instead: served vs direct decode (interleaved, fresh processes, median of --reps), start -> ready, "
              "and the TTFT of a cached --turns conversation's last turn vs cold; prints the server tax");
  c->add_option("--tokens-file", a->tokens_file,
                 "Prompt ids as a JSON array (instead of --pp random ids); the peer gets the same ids");
  c->add_option("--turns", a->turns, "--served: turns of the cached conversation")->capture_default_str();
  c->add_flag("--no-repack", a->no_repack,
              "Load without repacking weights for the packed GEMM kernels (as EMBER_REPACK=0; for A/B runs)");
  c->add_flag("--no-huge-pages", a->no_huge_pages,
              "Map the weights with 4 KiB pages (MADV_NOHUGEPAGE) instead of 2 MiB ones where the kernel can: "
              "the A/B of docs/engine.md \"Weight pages\"");
  c->add_flag("--json", a->json, "Print one JSON object");
  c->callback([a, set_exit] {
    Status st = a->served ? RunServedLeg(*a) : a->cache ? RunCacheLeg(*a) : Run(*a);
    if (!st.ok()) std::cerr << "ember bench: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("bench", Setup);

}  // namespace
}  // namespace ember::cli
