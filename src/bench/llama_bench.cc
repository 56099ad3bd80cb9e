#include "bench/llama_bench.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "bench/stats.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

using nlohmann::json;

std::string Head(const std::string& s, size_t n = 300) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

bool IsExecutableFile(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

double LlamaBenchTest::median_ts() const { return samples_ts.empty() ? avg_ts : Median(samples_ts); }

std::vector<std::string> LlamaBenchArgv(const std::string& binary, const std::string& model, int64_t n_prompt,
                                        int64_t n_gen, int64_t depth, const LlamaBenchSettings& s) {
  const int64_t batch = std::max<int64_t>({2048, n_prompt, s.ubatch});
  return {binary, "-m", model, "-p", std::to_string(n_prompt), "-n", std::to_string(n_gen),
          "-d", std::to_string(depth), "-t", std::to_string(s.threads), "-ctk", s.kv, "-ctv", s.kv,
          "-fa", "off", "-b", std::to_string(batch), "-ub", std::to_string(s.ubatch),
          "-r", std::to_string(s.reps), "-o", "json"};
}

StatusOr<std::vector<LlamaBenchTest>> ParseLlamaBenchJson(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return InvalidArgument("llama-bench output is not a JSON array (was it run with -o json?): " + Head(text));
  }
  std::vector<LlamaBenchTest> out;
  for (const json& t : j) {
    auto num = [&](const char* k) { return t.is_object() && t.contains(k) && t[k].is_number(); };
    if (!num("n_prompt") || !num("n_gen") || !num("avg_ts") || !num("n_threads")) {
      return InvalidArgument("llama-bench test without n_prompt / n_gen / n_threads / avg_ts: " + Head(t.dump()));
    }
    LlamaBenchTest r;
    r.n_prompt = t["n_prompt"].get<int64_t>();
    r.n_gen = t["n_gen"].get<int64_t>();
    r.n_depth = num("n_depth") ? t["n_depth"].get<int64_t>() : 0;
    r.threads = t["n_threads"].get<int>();
    r.avg_ts = t["avg_ts"].get<double>();
    auto str = [&](const char* k) { return t.contains(k) && t[k].is_string() ? t[k].get<std::string>() : ""; };
    r.type_k = str("type_k");
    r.type_v = str("type_v");
    r.build_commit = str("build_commit");
    r.cpu_info = str("cpu_info");
    r.model_type = str("model_type");
    // An int (0/1) in this version, a bool or "on"/"off" string in others.
    if (t.contains("flash_attn")) {
      const json& fa = t["flash_attn"];
      r.flash_attn = fa.is_boolean() ? fa.get<bool>() : fa.is_number() ? fa.get<double>() != 0 : fa == "on";
    }
    if (t.contains("samples_ts") && t["samples_ts"].is_array()) {
      for (const json& v : t["samples_ts"]) {
        if (v.is_number()) r.samples_ts.push_back(v.get<double>());
      }
    }
    if (!(r.median_ts() > 0)) return InvalidArgument("llama-bench test with no positive speed: " + Head(t.dump()));
    out.push_back(std::move(r));
  }
  if (out.empty()) return InvalidArgument("llama-bench printed an empty list of tests");
  return out;
}

StatusOr<LlamaBenchTest> RunLlamaBench(const std::string& binary, const std::string& model, int64_t n_prompt,
                                       int64_t n_gen, int64_t depth, const LlamaBenchSettings& settings) {
  const std::vector<std::string> argv = LlamaBenchArgv(binary, model, n_prompt, n_gen, depth, settings);
  const std::string what = "llama-bench (" + binary + " -p " + std::to_string(n_prompt) + " -n " +
                           std::to_string(n_gen) + " -d " + std::to_string(depth) + ")";
  auto r = RunProcess(argv, settings.timeout_s);
  if (!r.ok()) return FailedPrecondition(what + ": " + r.status().message());
  EMBER_RETURN_IF_ERROR(r->ToStatus(what));
  auto tests = ParseLlamaBenchJson(r->out);
  if (!tests.ok()) return InvalidArgument(what + ": " + tests.status().message());
  if (tests->size() != 1 || (*tests)[0].n_prompt != n_prompt || (*tests)[0].n_gen != n_gen) {
    return InvalidArgument(what + ": expected one test of -p " + std::to_string(n_prompt) + " -n " +
                           std::to_string(n_gen) + ", got " + std::to_string(tests->size()));
  }
  return (*tests)[0];
}

StatusOr<std::string> FindLlamaBench(const std::string& explicit_path, const std::string& build_peer_script) {
  if (!explicit_path.empty()) {
    if (IsExecutableFile(explicit_path)) return explicit_path;
    return NotFound("--llama-bench " + explicit_path + " is not an executable file");
  }
  auto r = RunProcess({build_peer_script, "--print"}, 60);
  std::string why;
  if (!r.ok()) {
    why = r.status().message();
  } else if (!r->ok()) {
    why = r->err.empty() ? "it exited " + std::to_string(r->exit_code) : r->err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
  } else {
    std::string bin = r->out;
    while (!bin.empty() && (bin.back() == '\n' || bin.back() == ' ')) bin.pop_back();
    bin = bin.substr(bin.rfind('\n') == std::string::npos ? 0 : bin.rfind('\n') + 1);
    const std::string exe = bin + "/llama-bench";
    if (IsExecutableFile(exe)) return exe;
    why = exe + " is not an executable file";
  }
  return NotFound("native llama-bench not found (" + build_peer_script + " --print: " + why +
                  "); build it once with scripts/build-peer (EMBER_PEER_DIR picks the folder), or pass "
                  "--llama-bench PATH");
}

StatusOr<PeerMode> ParsePeerMode(const std::string& text) {
  if (text == "auto") return PeerMode::kAuto;
  if (text == "native") return PeerMode::kNative;
  if (text == "binding") return PeerMode::kBinding;
  return InvalidArgument("--peer must be auto, native or binding (not '" + text + "')");
}

StatusOr<PeerChoice> ChoosePeer(PeerMode mode, const std::string& explicit_path, const std::string& build_peer_script) {
  PeerChoice c;
  if (mode == PeerMode::kBinding) {
    c.fallback_reason = "--peer binding was given";
    return c;
  }
  auto found = FindLlamaBench(explicit_path, build_peer_script);
  if (found.ok()) {
    c.kind = PeerKind::kLlamaBench;
    c.llama_bench = *found;
    return c;
  }
  if (mode == PeerMode::kNative) return NotFound("--peer native: " + found.status().message());
  c.fallback_reason = found.status().message();
  return c;
}

}  // namespace ember::bench
