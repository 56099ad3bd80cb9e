// The real stacks: each round a fresh child process whose JSON is parsed at the edge.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "bench/llamacpp_peer.h"
#include "bench/load_legs.h"
#include "bench/served_bench.h"
#include "bench/stack_runner.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

std::optional<double> Num(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  double v = j[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<std::string> Str(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return std::nullopt;
  return j[key].get<std::string>();
}

StatusOr<RunMeasurement> RunAndParse(const std::vector<std::string>& argv, double timeout_s,
                                     StatusOr<RunMeasurement> (*parse)(const std::string&)) {
  EMBER_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, timeout_s));
  if (r.timed_out) return ResourceExhausted(argv[0] + " timed out after " + std::to_string(timeout_s) + " s");
  auto m = parse(r.out);
  if (!m.ok() || r.exit_code != 0)
    return Internal(argv[0] + " " + argv[1] + " exited " + std::to_string(r.exit_code) + ": " +
                    (m.ok() ? "" : m.status().message() + " ") + r.err.substr(0, 500));
  if (m->peak_rss_bytes <= 0) m->peak_rss_bytes = r.peak_rss_bytes;  // rusage of the fresh process
  return m;
}

class EmberRunner : public StackRunner {
 public:
  EmberRunner(std::string binary, double timeout_s, std::vector<std::string> serve_extra)
      : binary_(std::move(binary)), timeout_s_(timeout_s), serve_extra_(std::move(serve_extra)) {}
  ~EmberRunner() override {
    std::error_code ec;
    if (!token_file_.empty()) std::filesystem::remove(token_file_, ec);
  }
  std::string name() const override { return "ember"; }
  bool Supports(Leg leg) const override { return leg != Leg::kCacheRestore || Flags().ssd_cache; }
  std::string SkipReason(Leg leg) const override {
    if (leg == Leg::kCacheRestore && !Flags().ssd_cache)
      return "skipped: no ssd tier (this `ember serve` has no --ssd-cache)";
    return StackRunner::SkipReason(leg);
  }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    if (!Supports(leg)) return Unimplemented(std::string("ember runner: leg ") + LegName(leg));
    if (leg == Leg::kServed) return RunServed(req);
    if (IsCacheLeg(leg)) return RunCache(leg, req);
    if (IsLoadLeg(leg)) return RunLoad(leg, req);
    std::vector<std::string> argv = {binary_, "bench", req.model_path, "--json", "--pp",
                                     std::to_string(req.tokens.size()), "--tg", std::to_string(req.gen_tokens),
                                     "--threads", std::to_string(req.threads), "--reps", "1"};
    // Feed the shared ids when `ember bench` can take them; otherwise it builds its own prompt of
    // the same length (recorded in the sample as same_tokens=false).
    bool shared = false;
    if (TakesTokenFile()) {
      const std::string path = TokenFile(req.tokens);
      if (!path.empty()) argv.insert(argv.end(), {"--tokens-file", path}), shared = true;
    }
    auto m = RunAndParse(argv, timeout_s_, &ParseEmberBenchJson);
    if (m.ok()) m->raw["same_tokens"] = shared;
    return m;
  }

 private:
  const ServeFlags& Flags() const {
    if (!flags_) flags_ = ProbeServeFlags(binary_);
    return *flags_;
  }
  StatusOr<std::vector<int32_t>> Banned(const std::string& model) {
    auto it = eog_.find(model);
    if (it != eog_.end()) return it->second;
    EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> ids, EogTokenIds(binary_, model));
    return eog_[model] = ids;
  }
  // A fresh server with exactly the requested threads (an engine that cannot be told its thread count
  // must already use it, or the cell fails: different thread counts are different cells).
  StatusOr<std::unique_ptr<ServerProcess>> StartServer(const BenchRequest& req, std::vector<std::string> extra) {
    if (Flags().ssd_cache && std::find(extra.begin(), extra.end(), "--ssd-cache") == extra.end())
      extra.push_back("--no-ssd-cache");  // RAM-only legs never touch the user's SSD cache directory
    EMBER_ASSIGN_OR_RETURN(auto server, ServerProcess::Start({binary_, req.model_path, Flags().threads ? req.threads : 0,
                                                             std::move(extra), timeout_s_}));
    if (!Flags().threads) {
      auto t = server->EngineThreads();
      if (!t || *t != req.threads)
        return FailedPrecondition("this `ember serve` has no --threads and its engine runs " +
                                  (t ? std::to_string(*t) : std::string("?")) + " threads, not " +
                                  std::to_string(req.threads));
    }
    return server;
  }
  // Load legs: a fresh server per level with as many lanes as clients (`--parallel N` where this
  // `ember serve` has it, unless --ember-serve-args already says), stopped cleanly after the level.
  StatusOr<RunMeasurement> RunLoad(Leg leg, const BenchRequest& req) {
    LoadTarget target;
    target.timeout_s = timeout_s_;
    EMBER_ASSIGN_OR_RETURN(target.banned, Banned(req.model_path));
    const bool says_parallel = std::find(serve_extra_.begin(), serve_extra_.end(), "--parallel") != serve_extra_.end();
    LoadLegHooks hooks;
    hooks.start = [&](int lanes) {
      std::vector<std::string> extra = serve_extra_;
      if (Flags().parallel && !says_parallel) extra.insert(extra.end(), {"--parallel", std::to_string(lanes)});
      return StartServer(req, std::move(extra));
    };
    hooks.stop = [](ServerProcess& s) { return StopServer(s); };
    EMBER_ASSIGN_OR_RETURN(RunMeasurement m, RunLoadLeg(leg, req, target, hooks));
    m.raw["parallel_flag"] = Flags().parallel;
    m.raw["serve_args"] = serve_extra_;
    return m;
  }

  static Status StopServer(ServerProcess& s) {
    EMBER_ASSIGN_OR_RETURN(int rc, s.Stop(120));
    if (rc != 0) return Internal("ember serve exited " + std::to_string(rc) + ": " + s.Log());
    return Status::Ok();
  }

  // served: a fresh server, an in-process warm-up request, then the shared prompt ids decoding gen+1
  // tokens (the first comes out of prefill, as in the direct leg), end-of-generation ids banned.
  StatusOr<RunMeasurement> RunServed(const BenchRequest& req) {
    EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> banned, Banned(req.model_path));
    EMBER_ASSIGN_OR_RETURN(auto server, StartServer(req, {}));
    std::vector<int32_t> head(req.tokens.begin(), req.tokens.begin() + std::min<size_t>(req.tokens.size(), 16));
    EMBER_RETURN_IF_ERROR(StreamCompletion(server->port(), {head, 8, "h2h-warmup", banned, timeout_s_}).status());
    EMBER_ASSIGN_OR_RETURN(CompletionTiming t,
                           StreamCompletion(server->port(), {req.tokens, req.gen_tokens + 1, "h2h", banned, timeout_s_}));
    RunMeasurement m;
    m.ttft_ms = t.ttft_ms;
    m.decode_tok_s = t.DecodeTokS();
    m.ready_ms = server->ready_ms();
    m.peak_rss_bytes = server->PeakRssBytes();
    m.raw = {{"ttft_ms", t.ttft_ms}, {"ready_ms", server->ready_ms()}, {"prompt_tokens", t.prompt_tokens},
             {"completion_tokens", t.completion_tokens}, {"cached_tokens", t.cached_tokens},
             {"first_to_last_ms", t.last_chunk_ms - t.ttft_ms}, {"total_ms", t.total_ms},
             {"finish_reason", t.finish_reason}, {"same_tokens", true}};
    EMBER_RETURN_IF_ERROR(StopServer(*server));
    return m;
  }

  // cache legs: the conversation's turns as token ids under one cache salt.
  //   warm: one fresh server (RAM tier) for all turns; cold: the same with --prompt-cache-bytes 0;
  //   restore: one server runs the conversation and is stopped (its cache flushed to --ssd-cache), then
  //   every turn is the first request of a fresh server on the same directory.
  StatusOr<RunMeasurement> RunCache(Leg leg, const BenchRequest& req) {
    if (req.turns.empty()) return InvalidArgument("cache leg without conversation turns");
    EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> banned, Banned(req.model_path));
    RunMeasurement m;
    std::vector<double> ready;
    if (leg == Leg::kCacheRestore) {
      const auto dir = std::filesystem::temp_directory_path() /
                       ("ember-h2h-ssd-" + std::to_string(::getpid()) + "-" + std::to_string(++restore_runs_));
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      std::filesystem::create_directories(dir, ec);
      struct Rm {
        std::filesystem::path p;
        ~Rm() {
          std::error_code e;
          std::filesystem::remove_all(p, e);
        }
      } rm{dir};
      const std::vector<std::string> ssd = {"--ssd-cache", dir.string()};
      {
        EMBER_ASSIGN_OR_RETURN(auto first, StartServer(req, ssd));
        EMBER_RETURN_IF_ERROR(RunConversation(first->port(), req.turns, req.turn_gen_tokens, "h2h", banned, timeout_s_).status());
        EMBER_RETURN_IF_ERROR(StopServer(*first));
      }
      for (size_t k = 0; k < req.turns.size(); ++k) {
        EMBER_ASSIGN_OR_RETURN(auto server, StartServer(req, ssd));
        ready.push_back(server->ready_ms());
        auto t = StreamCompletion(server->port(), {req.turns[k], req.turn_gen_tokens, "h2h", banned, timeout_s_});
        if (!t.ok()) return Internal("turn " + std::to_string(k + 1) + " after restart: " + t.status().message());
        m.turns.push_back({static_cast<int>(k + 1), t->ttft_ms, t->prompt_tokens, t->cached_tokens,
                           t->cache_tier.empty() ? "none" : t->cache_tier});
        m.peak_rss_bytes = std::max(m.peak_rss_bytes, server->PeakRssBytes());
        EMBER_RETURN_IF_ERROR(StopServer(*server));
      }
    } else {
      std::vector<std::string> extra;
      if (leg == Leg::kCacheCold) extra = {"--prompt-cache-bytes", "0"};
      EMBER_ASSIGN_OR_RETURN(auto server, StartServer(req, extra));
      ready.push_back(server->ready_ms());
      EMBER_ASSIGN_OR_RETURN(m.turns, RunConversation(server->port(), req.turns, req.turn_gen_tokens, "h2h", banned, timeout_s_));
      m.peak_rss_bytes = server->PeakRssBytes();
      EMBER_RETURN_IF_ERROR(StopServer(*server));
    }
    nlohmann::json turns = nlohmann::json::array();
    for (const auto& t : m.turns)
      turns.push_back({{"turn", t.turn}, {"ttft_ms", t.ttft_ms}, {"prompt_tokens", t.prompt_tokens},
                       {"cached_tokens", t.cached_tokens}, {"tier", t.tier}});
    m.raw = {{"turns", turns}, {"ready_ms", ready}, {"arena", "served"}};
    m.ttft_ms = m.turns.back().ttft_ms;
    return m;
  }

  bool TakesTokenFile() {
    if (!takes_token_file_) {
      auto help = RunProcess({binary_, "bench", "--help"}, 30);
      takes_token_file_ = help.ok() && help->out.find("--tokens-file") != std::string::npos;
    }
    return *takes_token_file_;
  }
  std::string TokenFile(const std::vector<int32_t>& tokens) {
    auto path = std::filesystem::temp_directory_path() / ("ember-h2h-tokens-" + std::to_string(::getpid()) + ".json");
    std::ofstream out(path);
    out << nlohmann::json(tokens).dump();
    if (!out) return "";
    token_file_ = path.string();
    return token_file_;
  }
  std::string binary_;
  double timeout_s_;
  std::vector<std::string> serve_extra_;  // --ember-serve-args: every `ember serve` of the load legs
  std::optional<bool> takes_token_file_;
  std::string token_file_;  // removed with the runner
  mutable std::optional<ServeFlags> flags_;
  std::map<std::string, std::vector<int32_t>> eog_;
  int restore_runs_ = 0;
};

class LlamaCppRunner : public StackRunner {
 public:
  LlamaCppRunner(std::string node, std::string runner, double timeout_s)
      : node_(std::move(node)), runner_(std::move(runner)), timeout_s_(timeout_s) {}
  ~LlamaCppRunner() override {
    std::error_code ec;
    for (const auto& f : files_) std::filesystem::remove(f, ec);
  }
  std::string name() const override { return "llama.cpp"; }
  bool Supports(Leg leg) const override { return leg != Leg::kServed && !IsLoadLeg(leg); }
  std::string SkipReason(Leg leg) const override {
    if (IsLoadLeg(leg))
      return "n/a: node-llama-cpp has no HTTP server; the load legs' peer is the native llama-server stack "
             "(--stacks ember,llama-server)";
    if (leg == Leg::kServed)
      return "n/a: node-llama-cpp has no HTTP server (llama-server is not part of the binding), so llama.cpp "
             "cannot be measured served; ember's served row stands alone";
    return StackRunner::SkipReason(leg);
  }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    if (!Supports(leg)) return Unimplemented(std::string("llama.cpp runner: leg ") + LegName(leg));
    if (IsCacheLeg(leg)) return RunCache(leg, req);
    std::string ids;
    for (int32_t t : req.tokens) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(t);
    }
    // The runner's first generated token comes out of prefill and its decode rate covers the other
    // gen-1; `ember bench --tg N` times N decode steps. Asking the peer for N+1 makes both N steps.
    return RunAndParse({node_, runner_, "bench", req.model_path, "--tokens", ids, "--gen",
                        std::to_string(req.gen_tokens + 1), "--threads", std::to_string(req.threads)},
                       timeout_s_, &ParsePeerBenchJson);
  }

 private:
  std::string NewFile(const std::string& stem) {
    files_.push_back((std::filesystem::temp_directory_path() /
                      (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(files_.size()))).string());
    return files_.back();
  }

  // The peer's cache legs run in the library (no HTTP in front of llama.cpp here): warm = one context
  // sequence reused across turns, cold = cleared before each turn, restore = the sequence's state saved
  // by one process after the conversation and loaded by a fresh process per turn (load time included).
  StatusOr<RunMeasurement> RunCache(Leg leg, const BenchRequest& req) {
    if (req.turns.empty()) return InvalidArgument("cache leg without conversation turns");
    if (turns_file_.empty()) turns_file_ = NewFile("ember-h2h-turns");
    {
      std::ofstream out(turns_file_, std::ios::trunc);
      out << nlohmann::json(req.turns).dump();
      if (!out) return IoError("cannot write " + turns_file_);
    }
    std::vector<std::string> base = {node_, runner_, "converse", req.model_path, "--turns-file", turns_file_, "--gen",
                                     std::to_string(req.turn_gen_tokens), "--threads", std::to_string(req.threads)};
    auto with = [&base](std::vector<std::string> more) {
      std::vector<std::string> a = base;
      a.insert(a.end(), more.begin(), more.end());
      return a;
    };
    if (leg != Leg::kCacheRestore)
      return RunAndParse(with({"--mode", leg == Leg::kCacheCold ? "cold" : "warm"}), timeout_s_, &ParsePeerConverseJson);
    const std::string state = state_file_.empty() ? (state_file_ = NewFile("ember-h2h-peer-state")) : state_file_;
    EMBER_RETURN_IF_ERROR(RunAndParse(with({"--mode", "warm", "--save-state", state}), timeout_s_, &ParsePeerConverseJson).status());
    RunMeasurement m;
    nlohmann::json raw_turns = nlohmann::json::array();
    for (size_t k = 0; k < req.turns.size(); ++k) {
      EMBER_ASSIGN_OR_RETURN(RunMeasurement one, RunAndParse(with({"--mode", "warm", "--load-state", state, "--only",
                                                                   std::to_string(k + 1)}),
                                                              timeout_s_, &ParsePeerConverseJson));
      if (one.turns.size() != 1) return Internal("peer converse --only returned " + std::to_string(one.turns.size()) + " turns");
      m.turns.push_back(one.turns[0]);
      m.turns.back().tier = "state-file";
      m.peak_rss_bytes = std::max(m.peak_rss_bytes, one.peak_rss_bytes);
      m.version = one.version;
      m.variant = one.variant;
      raw_turns.push_back(one.raw["turns"][0]);
    }
    m.ttft_ms = m.turns.back().ttft_ms;
    m.raw = {{"turns", raw_turns}, {"arena", "library"}};
    return m;
  }

  std::string node_, runner_;
  double timeout_s_;
  std::vector<std::string> files_;
  std::string turns_file_, state_file_;
};

}  // namespace

const std::vector<LegSpec>& AllLegs() {
  static const std::vector<LegSpec> kLegs = {
      {Leg::kDirect, "direct", true},
      {Leg::kServed, "served", true},
      {Leg::kCacheWarm, "cache-warm", true},
      {Leg::kCacheRestore, "cache-restore", true},
      {Leg::kCacheCold, "cache-cold", true},
      {Leg::kConcurrency, "concurrency", true},
      {Leg::kAgents, "agents", true},
  };
  return kLegs;
}

const char* LegName(Leg leg) {
  for (const auto& l : AllLegs())
    if (l.leg == leg) return l.name;
  return "unknown";
}

std::optional<Leg> ParseLeg(const std::string& name) {
  for (const auto& l : AllLegs())
    if (name == l.name) return l.leg;
  return std::nullopt;
}

StatusOr<RunMeasurement> ParseEmberBenchJson(const std::string& text) {
  EMBER_ASSIGN_OR_RETURN(nlohmann::json j, LastJsonObject(text));
  if (auto e = Str(j, "error")) return Internal("ember bench: " + *e);
  RunMeasurement m;
  m.prefill_tok_s = Num(j, "prefill_tok_s");
  m.decode_tok_s = Num(j, "decode_tok_s");
  m.ttft_ms = Num(j, "ttft_ms");
  if (!m.prefill_tok_s && !m.decode_tok_s) return InvalidArgument("ember bench JSON has no prefill_tok_s/decode_tok_s");
  m.peak_rss_bytes = static_cast<int64_t>(Num(j, "peak_rss_bytes").value_or(0));
  m.version = Str(j, "version");
  m.arch = Str(j, "arch");
  m.dtype = Str(j, "dtype");
  if (auto p = Num(j, "params")) m.params = static_cast<int64_t>(*p);
  m.raw = std::move(j);
  return m;
}

StatusOr<RunMeasurement> ParsePeerBenchJson(const std::string& text) {
  EMBER_ASSIGN_OR_RETURN(nlohmann::json j, LastJsonObject(text));
  if (auto e = Str(j, "error")) return Internal("llama.cpp runner: " + *e);
  RunMeasurement m;
  m.prefill_tok_s = Num(j, "prefill_tok_s");
  m.decode_tok_s = Num(j, "decode_tok_s");
  if (!m.prefill_tok_s) return InvalidArgument("peer JSON has no prefill_tok_s");
  if (j.contains("peer") && j["peer"].is_object()) {
    m.version = Str(j["peer"], "version");
    m.variant = Str(j["peer"], "cpu_variant");
  }
  // The generated ids are bulky and not a measurement; keep the timings only.
  j.erase("tokens");
  m.raw = std::move(j);
  return m;
}

StatusOr<RunMeasurement> ParsePeerConverseJson(const std::string& text) {
  EMBER_ASSIGN_OR_RETURN(nlohmann::json j, LastJsonObject(text));
  if (auto e = Str(j, "error")) return Internal("llama.cpp runner: " + *e);
  if (!j.contains("turns") || !j["turns"].is_array() || j["turns"].empty())
    return InvalidArgument("peer converse JSON has no turns");
  RunMeasurement m;
  for (const auto& t : j["turns"]) {
    auto ttft = Num(t, "ttft_ms");
    if (!ttft) return InvalidArgument("peer converse turn without ttft_ms");
    m.turns.push_back({static_cast<int>(Num(t, "turn").value_or(0)), *ttft,
                       static_cast<int64_t>(Num(t, "prompt_tokens").value_or(0)),
                       static_cast<int64_t>(Num(t, "cached_tokens").value_or(0)),
                       j.value("mode", std::string("warm")) == "cold" ? "none" : "sequence"});
  }
  m.ttft_ms = m.turns.back().ttft_ms;
  if (j.contains("peer") && j["peer"].is_object()) {
    m.version = Str(j["peer"], "version");
    m.variant = Str(j["peer"], "cpu_variant");
  }
  j["arena"] = "library";
  m.raw = std::move(j);
  return m;
}

std::unique_ptr<StackRunner> MakeEmberRunner(const std::string& ember_binary, double timeout_s,
                                             const std::vector<std::string>& serve_extra) {
  return std::make_unique<EmberRunner>(ember_binary, timeout_s, serve_extra);
}

std::unique_ptr<StackRunner> MakeLlamaCppRunner(const std::string& node, const std::string& runner_mjs,
                                                double timeout_s) {
  return std::make_unique<LlamaCppRunner>(node, runner_mjs, timeout_s);
}

}  // namespace ember::bench
