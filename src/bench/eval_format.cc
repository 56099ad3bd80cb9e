#include "bench/eval_format.h"

#include <cstdio>

namespace ember::bench {
namespace {

template <typename T>
nlohmann::json Opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json Embedded(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

std::string Num(const std::optional<double>& v, const char* fmt) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, *v);
  return buf;
}

}  // namespace

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

nlohmann::json EvalRowToJson(const EvalRow& r) {
  return {{"id", r.id},
          {"created_at", r.created_at},
          {"ember_commit", r.ember_commit},
          {"ember_dirty", r.ember_dirty},
          {"stack", r.stack},
          {"stack_version", Opt(r.stack_version)},
          {"stack_variant", Opt(r.stack_variant)},
          {"model_path", r.model_path},
          {"model_hash", Opt(r.model_hash)},
          {"arch", Opt(r.arch)},
          {"params", Opt(r.params)},
          {"dtype", Opt(r.dtype)},
          {"leg", r.leg},
          {"threads", Opt(r.threads)},
          {"prompt_tokens", Opt(r.prompt_tokens)},
          {"gen_tokens", Opt(r.gen_tokens)},
          {"cached_tokens", Opt(r.cached_tokens)},
          {"context_tokens", Opt(r.context_tokens)},
          {"turn", Opt(r.turn)},
          {"prefill_tok_s", Opt(r.prefill_tok_s)},
          {"decode_tok_s", Opt(r.decode_tok_s)},
          {"ttft_ms", Opt(r.ttft_ms)},
          {"ready_ms", Opt(r.ready_ms)},
          {"clients", Opt(r.clients)},
          {"ttft_p95_ms", Opt(r.ttft_p95_ms)},
          {"wall_ms", Opt(r.wall_ms)},
          {"peak_rss_bytes", Opt(r.peak_rss_bytes)},
          {"n_runs", Opt(r.n_runs)},
          {"spread", Opt(r.spread)},
          {"tag", Opt(r.tag)},
          {"preflight_ok", Opt(r.preflight_ok)},
          {"machine_state", Embedded(r.machine_state)},
          {"samples", Embedded(r.samples)}};
}

std::string FormatEvalTable(const std::vector<EvalRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-5s %-20s %-9s %-10s %-28s %3s %9s %8s %8s %4s %6s %s\n", "id", "time", "stack",
                "leg", "model", "thr", "prefill", "decode", "ttft_ms", "runs", "spread", "tag");
  out += line;
  for (const EvalRow& r : rows) {
    std::string model = BaseName(r.model_path).substr(0, 28);
    std::string tag = r.tag.value_or("-");
    if (r.preflight_ok && !*r.preflight_ok) tag += " \u2021";  // ‡: preflight failed; ratios only
    std::snprintf(line, sizeof(line), "%-5lld %-20s %-9s %-10s %-28s %3s %9s %8s %8s %4s %6s %s\n",
                  static_cast<long long>(r.id), r.created_at.substr(0, 20).c_str(), r.stack.substr(0, 9).c_str(),
                  r.leg.substr(0, 10).c_str(), model.c_str(),
                  r.threads ? std::to_string(*r.threads).c_str() : "-", Num(r.prefill_tok_s, "%.1f").c_str(),
                  Num(r.decode_tok_s, "%.2f").c_str(), Num(r.ttft_ms, "%.1f").c_str(),
                  r.n_runs ? std::to_string(*r.n_runs).c_str() : "-", Num(r.spread, "%.3f").c_str(), tag.c_str());
    out += line;
  }
  return out;
}

}  // namespace ember::bench
