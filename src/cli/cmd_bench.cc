// ember bench: prefill (pp) and decode (tg) throughput, median of reps after a warm-up; peak RSS;
// achieved weight-read bandwidth in decode against this machine's measured read bandwidth; a per-op
// time breakdown. --vs-llamacpp interleaves runs of the llama.cpp peer (1 and 2 threads) on the same
// file and token ids, and reports ember / peer-best ratios.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/served_bench.h"
#include "bench/cache_bench.h"
#include "cache/cache_options.h"
#include "cli/command.h"
#include "engine/engine.h"
#include "util/stopwatch.h"

namespace ember::cli {
namespace {

using nlohmann::json;

struct Args {
  std::string model, kv = "f16";
  int64_t pp = 512, tg = 128, ubatch = 512;
  int reps = 5, threads = 0;
  bool json = false, vs_llamacpp = false, cache = false, served = false;
  int turns = 10;
  std::string tokens_file;  // JSON array of prompt ids (overrides --pp)
};

// The prompt ids of --tokens-file: a JSON array of integers in [0, n_vocab).
StatusOr<std::vector<int32_t>> ReadTokensFile(const std::string& path, int64_t n_vocab) {
  std::ifstream in(path);
  if (!in) return IoError("--tokens-file: cannot read " + path);
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty()) {
    return InvalidArgument("--tokens-file: " + path + " is not a non-empty JSON array of token ids");
  }
  std::vector<int32_t> ids;
  for (const json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n_vocab) {
      return InvalidArgument("--tokens-file: " + path + ": " + v.dump() + " is not a token id in [0, " +
                             std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

double Secs(const Stopwatch& t0) { return t0.ElapsedSeconds(); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Read bandwidth (GB/s) of `threads` threads summing disjoint parts of a 512 MiB buffer (best of 3).
double MeasureReadBandwidth(int threads) {
  const size_t n = (512u << 20) / sizeof(uint64_t);
  std::vector<uint64_t> buf(n, 1);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> ts;
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    const Stopwatch t0;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        const size_t b = n * t / threads, e = n * (t + 1) / threads;
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = b; i + 4 <= e; i += 4) { s0 += buf[i]; s1 += buf[i + 1]; s2 += buf[i + 2]; s3 += buf[i + 3]; }
        sums[static_cast<size_t>(t)] = s0 + s1 + s2 + s3;
      });
    }
    for (auto& th : ts) th.join();
    const double s = Secs(t0);
    if (sums[0] == 42) std::fprintf(stderr, " ");  // keep the loads
    best = std::max(best, n * sizeof(uint64_t) / s / 1e9);
  }
  return best;
}

struct RepResult {
  double pp_tok_s = 0, tg_tok_s = 0;
};

StatusOr<RepResult> RunOnce(Engine& e, const std::vector<int32_t>& prompt, int64_t tg, int64_t ubatch,
                            OpTimes* pp_ops, OpTimes* tg_ops) {
  EMBER_ASSIGN_OR_RETURN(auto seq, e.NewSequence());
  RepResult r;
  seq->op_times() = *pp_ops;
  Stopwatch t0;
  EMBER_ASSIGN_OR_RETURN(const float* logits, e.Prefill(*seq, prompt, ubatch));
  r.pp_tok_s = static_cast<double>(prompt.size()) / Secs(t0);
  *pp_ops = seq->op_times();
  seq->op_times() = *tg_ops;
  const int64_t nv = e.model().config().n_vocab;
  t0.Reset();
  for (int64_t i = 0; i < tg; ++i) {  // greedy, as the peer's bench does
    const int32_t tok = static_cast<int32_t>(std::max_element(logits, logits + nv) - logits);
    EMBER_ASSIGN_OR_RETURN(logits, e.Decode(*seq, tok));
  }
  r.tg_tok_s = tg > 0 ? static_cast<double>(tg) / Secs(t0) : 0;
  *tg_ops = seq->op_times();
  return r;
}

StatusOr<json> RunPeer(const Args& a, const std::vector<int32_t>& prompt, int threads) {
  std::string ids;
  for (size_t i = 0; i < prompt.size(); ++i) ids += (i ? "," : "") + std::to_string(prompt[i]);
  const std::string cmd = "node " + std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs bench '" + a.model +
                          "' --tokens " + ids + " --gen " + std::to_string(a.tg + 1) + " --threads " +
                          std::to_string(threads) + " --kv " + a.kv;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return IoError("cannot run the llama.cpp peer");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int rc = pclose(p);
  json j = json::parse(out, nullptr, false);
  if (rc != 0 || j.is_discarded() || j.contains("error")) return Internal("llama.cpp peer failed: " + out);
  return j;
}

json OpsJson(const OpTimes& o) {
  const double total = o.matmul_s + o.attention_s + o.norm_s + o.rope_s + o.other_s;
  return {{"matmul_s", o.matmul_s}, {"attention_s", o.attention_s}, {"norm_s", o.norm_s},
          {"rope_s", o.rope_s}, {"other_s", o.other_s}, {"total_s", total}};
}

Status Run(const Args& a) {
  EngineOptions eo;
  eo.threads = a.threads;
  eo.ubatch = a.ubatch;
  eo.load_tokenizer = false;
  eo.kv_dtype = a.kv == "f32" ? KvDtype::kF32 : KvDtype::kF16;
  if (a.kv != "f16" && a.kv != "f32") return InvalidArgument("--kv must be f16 or f32");
  if (a.pp < 1 || a.tg < 0 || a.reps < 1) return InvalidArgument("--pp >= 1, --tg >= 0, --reps >= 1");
  EMBER_ASSIGN_OR_RETURN(auto engine, Engine::Load(a.model, eo));
  const int64_t nv = engine->model().config().n_vocab;
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt;
  if (!a.tokens_file.empty()) {
    // --tokens-file: these exact ids (a JSON array) for ember and, through --tokens, the peer.
    EMBER_ASSIGN_OR_RETURN(prompt, ReadTokensFile(a.tokens_file, nv));
  } else {
    for (int64_t i = 0; i < a.pp; ++i) prompt.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(std::min<int64_t>(nv, 32000))));
  }

  OpTimes pp_ops, tg_ops;
  EMBER_RETURN_IF_ERROR(RunOnce(*engine, prompt, std::min<int64_t>(a.tg, 8), a.ubatch, &pp_ops, &tg_ops).status());  // warm-up
  pp_ops = OpTimes{};
  tg_ops = OpTimes{};
  pp_ops.enabled = tg_ops.enabled = true;
  std::vector<double> pp_runs, tg_runs;
  json peer_runs = json::array();
  for (int rep = 0; rep < a.reps; ++rep) {
    EMBER_ASSIGN_OR_RETURN(RepResult r, RunOnce(*engine, prompt, a.tg, a.ubatch, &pp_ops, &tg_ops));
    pp_runs.push_back(r.pp_tok_s);
    tg_runs.push_back(r.tg_tok_s);
    if (!a.vs_llamacpp) continue;
    for (int t : {1, 2}) {  // interleaved with ember's reps so both see the same machine state
      EMBER_ASSIGN_OR_RETURN(json pj, RunPeer(a, prompt, t));
      peer_runs.push_back({{"threads", t}, {"prefill_tok_s", pj["prefill_tok_s"]}, {"decode_tok_s", pj["decode_tok_s"]}});
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double pp = Median(pp_runs), tg = Median(tg_runs);
  const uint64_t wbytes = engine->model().weight_bytes();
  const double machine_bw = MeasureReadBandwidth(engine->threads());
  json j = {{"model", a.model}, {"threads", engine->threads()}, {"pp_tokens", static_cast<int64_t>(prompt.size())}, {"tg_tokens", a.tg},
            {"kv", a.kv}, {"reps", a.reps}, {"prefill_tok_s", pp}, {"decode_tok_s", tg},
            {"prefill_runs", pp_runs}, {"decode_runs", tg_runs},
            {"peak_rss_bytes", static_cast<uint64_t>(ru.ru_maxrss) * 1024}, {"weight_bytes", wbytes},
            {"bandwidth_gbs", tg * static_cast<double>(wbytes) / 1e9}, {"machine_read_gbs", machine_bw},
            {"bandwidth_fraction", machine_bw > 0 ? tg * static_cast<double>(wbytes) / 1e9 / machine_bw : 0},
            {"ops", {{"prefill", OpsJson(pp_ops)}, {"decode", OpsJson(tg_ops)}}}};
  if (a.vs_llamacpp) {
    double best_pp = 0, best_tg = 0;
    for (const auto& r : peer_runs) {
      best_pp = std::max(best_pp, r["prefill_tok_s"].is_number() ? r["prefill_tok_s"].get<double>() : 0.0);
      best_tg = std::max(best_tg, r["decode_tok_s"].is_number() ? r["decode_tok_s"].get<double>() : 0.0);
    }
    j["peer"] = {{"runs", peer_runs}, {"best_prefill_tok_s", best_pp}, {"best_decode_tok_s", best_tg}};
    j["ratios"] = {{"prefill", best_pp > 0 ? pp / best_pp : 0}, {"decode", best_tg > 0 ? tg / best_tg : 0}};
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
    return Status::Ok();
  }
  std::printf("%s  threads %d  kv %s\n", a.model.c_str(), engine->threads(), a.kv.c_str());
  std::printf("pp%lld: %.1f tok/s   tg%lld: %.1f tok/s   (median of %d)\n", static_cast<long long>(prompt.size()), pp,
              static_cast<long long>(a.tg), tg, a.reps);
  std::printf("weights %.1f MB, decode reads %.1f GB/s of %.1f GB/s measured (%.0f%%), peak RSS %.1f MB\n",
              wbytes / 1e6, j["bandwidth_gbs"].get<double>(), machine_bw, 100 * j["bandwidth_fraction"].get<double>(),
              ru.ru_maxrss / 1024.0);
  for (const char* phase : {"prefill", "decode"}) {
    const json& o = j["ops"][phase];
    const double tot = std::max(1e-12, o["total_s"].get<double>());
    std::printf("%-8s matmul %4.1f%%  attention %4.1f%%  norm %4.1f%%  rope %4.1f%%  other %4.1f%%\n", phase,
                100 * o["matmul_s"].get<double>() / tot, 100 * o["attention_s"].get<double>() / tot,
                100 * o["norm_s"].get<double>() / tot, 100 * o["rope_s"].get<double>() / tot,
                100 * o["other_s"].get<double>() / tot);
  }
  if (a.vs_llamacpp) {
    std::printf("llama.cpp best: pp %.1f tok/s, tg %.1f tok/s  ->  ember/peer: pp %.2fx, tg %.2fx\n",
                j["peer"]["best_prefill_tok_s"].get<double>(), j["peer"]["best_decode_tok_s"].get<double>(),
                j["ratios"]["prefill"].get<double>(), j["ratios"]["decode"].get<double>());
  }
  return Status::Ok();
}

// `ember bench MODEL --cache`: the cache benchmark of src/bench/cache_bench.h with its default script.
Status RunCacheLeg(const Args& a) {
  CacheBenchOptions o;
  o.cache_bytes = DefaultPromptCacheBytes();
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadCacheBenchEngine(a.model, a.threads, o));
  EMBER_ASSIGN_OR_RETURN(auto turns, RunCacheBench(*engine, o));
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
  if (!a.json) c.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  EMBER_ASSIGN_OR_RETURN(bench::ServedBenchResult r, bench::RunServedBench(c));
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
  c->add_flag("--vs-llamacpp", a->vs_llamacpp, "Interleave llama.cpp peer runs (1 and 2 threads) and print ratios");
  c->add_flag("--cache", a->cache,
              "Instead: the scripted 10-turn conversation, TTFT per turn with the prompt cache on and off "
              "(the same as `ember bench-cache MODEL` with its defaults)");
  c->add_flag("--served", a->served,
              "Instead: served vs direct decode (interleaved, fresh processes, median of --reps), start -> ready, "
              "and the TTFT of a cached --turns conversation's last turn vs cold; prints the server tax");
  c->add_option("--tokens-file", a->tokens_file,
                 "Prompt ids as a JSON array (instead of --pp random ids); the peer gets the same ids");
  c->add_option("--turns", a->turns, "--served: turns of the cached conversation")->capture_default_str();
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
