// The real stacks: each round a fresh child process whose JSON is parsed at the edge.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "bench/stack_runner.h"
#include "bench/subprocess.h"

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

// The last line of stdout that parses as a JSON object (stacks may log before it).
StatusOr<nlohmann::json> LastJsonObject(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    nlohmann::json j = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
    if (start == 0) break;
    end = start - 1;
  }
  return InvalidArgument("no JSON object in output: " + text.substr(0, 200));
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
  EmberRunner(std::string binary, double timeout_s) : binary_(std::move(binary)), timeout_s_(timeout_s) {}
  ~EmberRunner() override {
    std::error_code ec;
    if (!token_file_.empty()) std::filesystem::remove(token_file_, ec);
  }
  std::string name() const override { return "ember"; }
  bool Supports(Leg leg) const override { return leg == Leg::kDirect; }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    if (!Supports(leg)) return Unimplemented(std::string("ember runner: leg ") + LegName(leg));
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
  std::optional<bool> takes_token_file_;
  std::string token_file_;  // removed with the runner
};

class LlamaCppRunner : public StackRunner {
 public:
  LlamaCppRunner(std::string node, std::string runner, double timeout_s)
      : node_(std::move(node)), runner_(std::move(runner)), timeout_s_(timeout_s) {}
  std::string name() const override { return "llama.cpp"; }
  bool Supports(Leg leg) const override { return leg == Leg::kDirect; }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    if (!Supports(leg)) return Unimplemented(std::string("llama.cpp runner: leg ") + LegName(leg));
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
  std::string node_, runner_;
  double timeout_s_;
};

}  // namespace

const std::vector<LegSpec>& AllLegs() {
  static const std::vector<LegSpec> kLegs = {
      {Leg::kDirect, "direct", true},
      {Leg::kServed, "served", false},
      {Leg::kCacheWarm, "cache-warm", false},
      {Leg::kCacheRestore, "cache-restore", false},
      {Leg::kCacheCold, "cache-cold", false},
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

std::unique_ptr<StackRunner> MakeEmberRunner(const std::string& ember_binary, double timeout_s) {
  return std::make_unique<EmberRunner>(ember_binary, timeout_s);
}

std::unique_ptr<StackRunner> MakeLlamaCppRunner(const std::string& node, const std::string& runner_mjs,
                                                double timeout_s) {
  return std::make_unique<LlamaCppRunner>(node, runner_mjs, timeout_s);
}

}  // namespace ember::bench
