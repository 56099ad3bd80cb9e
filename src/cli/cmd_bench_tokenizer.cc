// ember bench-tokenizer MODEL: tokenizer throughput (MB/s) of ember and of llama.cpp side by side on the
// same generated mixed text (>= 10 MB by default). The peer's time is taken inside node around
// model.tokenize only (runner.mjs tokenize-bench), so process start and model loading are excluded on
// both sides. Token counts are compared as a parity check.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "tokenizer/corpus.h"
#include "tokenizer/tokenizer.h"
#include "util/stopwatch.h"

namespace ember::cli {
namespace {

using nlohmann::json;

struct Args {
  std::string model, runner = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
  double mb = 10.0;
  int runs = 3;
  uint64_t seed = 42;
  bool special = false, no_peer = false, as_json = false;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the peer's tokenize-bench on `text_path`; its last stdout line is a JSON object.
StatusOr<json> RunPeer(const Args& a, const std::string& text_path) {
  const std::string cmd = "node " + Quote(a.runner) + " tokenize-bench " + Quote(a.model) + " --text-file " +
                          Quote(text_path) + " --runs " + std::to_string(a.runs) + (a.special ? " --special" : "") +
                          " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return IoError("cannot run node");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  const size_t nl = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  json j = json::parse(nl == std::string::npos ? out : out.substr(nl + 1), nullptr, false);
  if (rc != 0 || !j.is_object() || j.contains("error")) {
    return FailedPrecondition("llama.cpp peer failed (" + cmd + "): " + out.substr(0, 500));
  }
  return j;
}

int Run(const Args& a) {
  auto tok = LoadTokenizerFromGguf(a.model);
  if (!tok.ok()) {
    std::cerr << "ember bench-tokenizer: " << tok.status().ToString() << "\n";
    return 1;
  }
  const std::string text = GenerateMixedText(static_cast<size_t>(a.mb * 1024 * 1024), a.seed);
  double best = 1e30;
  size_t n_tokens = 0;
  for (int r = 0; r < std::max(1, a.runs); ++r) {
    const Stopwatch t0;
    const std::vector<int32_t> ids = (*tok)->Encode(text, /*add_special=*/false, a.special);
    best = std::min(best, t0.ElapsedSeconds());
    n_tokens = ids.size();
  }
  const double ember_mbs = text.size() / 1e6 / best;
  json result = {{"model", a.model}, {"bytes", text.size()}, {"runs", a.runs},
                 {"ember", {{"best_ms", best * 1e3}, {"mb_per_s", ember_mbs}, {"n_tokens", n_tokens}}}};
  if (!a.no_peer) {
    char tmpl[] = "/tmp/ember_bench_tok_XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) {
      std::cerr << "ember bench-tokenizer: cannot create a temporary file\n";
      return 1;
    }
    close(fd);
    std::ofstream(tmpl, std::ios::binary) << text;
    auto peer = RunPeer(a, tmpl);
    unlink(tmpl);
    if (!peer.ok()) {
      std::cerr << "ember bench-tokenizer: " << peer.status().ToString() << "\n";
      return 1;
    }
    result["llama_cpp"] = *peer;
    result["ratio"] = ember_mbs / (*peer)["mb_per_s"].get<double>();
    result["same_token_count"] = (*peer)["n_tokens"].get<size_t>() == n_tokens;
  }
  if (a.as_json) {
    std::cout << result.dump() << "\n";
    return 0;
  }
  std::printf("text: %.1f MB mixed (seed %llu), best of %d\n", text.size() / 1e6,
              static_cast<unsigned long long>(a.seed), a.runs);
  std::printf("ember      %8.2f MB/s  %10zu tokens\n", ember_mbs, n_tokens);
  if (!a.no_peer) {
    std::printf("llama.cpp  %8.2f MB/s  %10zu tokens\n", result["llama_cpp"]["mb_per_s"].get<double>(),
                result["llama_cpp"]["n_tokens"].get<size_t>());
    std::printf("ratio      %8.2fx  (token counts %s)\n", result["ratio"].get<double>(),
                result["same_token_count"].get<bool>() ? "equal" : "DIFFER");
  }
  return 0;
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("bench-tokenizer", "Tokenizer MB/s, ember and llama.cpp side by side on the same text");
  c->add_option("model", a->model, "GGUF model (vocab-only is enough)")->required();
  c->add_option("--mb", a->mb, "Size of the generated mixed text in MiB")->capture_default_str();
  c->add_option("--runs", a->runs, "Timed runs per side (best is reported)")->capture_default_str();
  c->add_option("--seed", a->seed, "Text generator seed")->capture_default_str();
  c->add_option("--runner", a->runner, "Path of peers/llamacpp/runner.mjs")->capture_default_str();
  c->add_flag("--special", a->special, "Parse special tokens");
  c->add_flag("--no-peer", a->no_peer, "Measure ember only");
  c->add_flag("--json", a->as_json, "Print one JSON object");
  c->callback([a, set_exit] { set_exit(Run(*a)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("bench-tokenizer", Setup);

}  // namespace ember::cli
