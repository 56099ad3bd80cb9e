#include "bench/peer_compare.h"

#include <algorithm>
#include <cstdio>

#include "bench/stats.h"

namespace ember::bench {
namespace {

using nlohmann::json;

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

struct Metric {
  std::string name;  // pp512, tg128, pp2048
  const char* json_key;
  double RoundSpeeds::*field;
};

std::vector<Metric> Metrics(const PeerComparison& c) {
  std::vector<Metric> m = {{"pp" + std::to_string(c.pp), "prefill", &RoundSpeeds::pp}};
  if (c.tg > 0) m.push_back({"tg" + std::to_string(c.tg), "decode", &RoundSpeeds::tg});
  if (c.long_pp > 0) m.push_back({"pp" + std::to_string(c.long_pp), "long_prefill", &RoundSpeeds::long_pp});
  return m;
}

std::vector<double> Column(const std::vector<RoundSpeeds>& rounds, double RoundSpeeds::*field) {
  std::vector<double> v;
  for (const RoundSpeeds& r : rounds) v.push_back(r.*field);
  return v;
}

RatioSummary SummaryOf(const PeerComparison& c, const Metric& m) {
  return Summarize(Column(c.ember, m.field), Column(c.peer, m.field));
}

std::string PeerName(const PeerComparison& c) {
  return c.kind == PeerKind::kLlamaBench ? "llama-bench" : "node-llama-cpp binding";
}

}  // namespace

const char* PeerKindName(PeerKind kind) { return kind == PeerKind::kLlamaBench ? "llama-bench" : "node-llama-cpp"; }

std::string PeerDescription(PeerKind kind) {
  if (kind == PeerKind::kLlamaBench) {
    return "native llama.cpp: its own llama-bench (scripts/build-peer's build unless --llama-bench names another)";
  }
  return "llama.cpp through the node-llama-cpp binding, NOT native llama.cpp: the binding's decode has no "
         "persistent thread pool, so ratios against it overstate ember (build the native peer with "
         "scripts/build-peer)";
}

RatioSummary Summarize(const std::vector<double>& ember, const std::vector<double>& peer) {
  RatioSummary s;
  s.ember = Median(ember);
  s.peer = Median(peer);
  s.ratio = s.peer > 0 ? s.ember / s.peer : 0;
  for (size_t i = 0; i < std::min(ember.size(), peer.size()); ++i) {
    s.rounds.push_back(peer[i] > 0 ? ember[i] / peer[i] : 0);
  }
  if (!s.rounds.empty()) {
    s.round_min = *std::min_element(s.rounds.begin(), s.rounds.end());
    s.round_max = *std::max_element(s.rounds.begin(), s.rounds.end());
  }
  return s;
}

json PeerJson(const PeerComparison& c) {
  json rounds = json::array();
  for (const RoundSpeeds& r : c.peer) {
    json o = {{"prefill_tok_s", r.pp}, {"decode_tok_s", r.tg}};
    if (c.long_pp > 0) o["long_prefill_tok_s"] = r.long_pp;
    rounds.push_back(o);
  }
  json j = {{"kind", PeerKindName(c.kind)},
            {"native", c.kind == PeerKind::kLlamaBench},
            {"description", PeerDescription(c.kind)},
            {"binary", c.binary},
            {"threads", c.threads},
            {"kv", c.kv},
            {"flash_attn", "off"},
            {"ubatch", c.ubatch},
            {"tg_depth", c.pp},
            {"rounds", rounds},
            {"prefill_tok_s", Median(Column(c.peer, &RoundSpeeds::pp))},
            {"decode_tok_s", Median(Column(c.peer, &RoundSpeeds::tg))}};
  if (c.kind == PeerKind::kLlamaBench) {
    j["reps_per_round"] = c.peer_reps;
    j["build_commit"] = c.build_commit;
    j["cpu_info"] = c.cpu_info;
  } else {
    j["fallback_reason"] = c.fallback_reason;
  }
  if (c.long_pp > 0) {
    j["long_pp_tokens"] = c.long_pp;
    j["long_prefill_tok_s"] = Median(Column(c.peer, &RoundSpeeds::long_pp));
  }
  return j;
}

json RatiosJson(const PeerComparison& c) {
  json j = {{"vs", PeerKindName(c.kind)}};
  for (const Metric& m : Metrics(c)) {
    const RatioSummary s = SummaryOf(c, m);
    j[m.json_key] = {{"metric", m.name}, {"ratio", s.ratio}, {"round_min", s.round_min}, {"round_max", s.round_max},
                     {"rounds", s.rounds}, {"ember_tok_s", s.ember}, {"peer_tok_s", s.peer},
                     {"vs", PeerKindName(c.kind)}};
  }
  return j;
}

std::vector<std::string> ComparisonLines(const PeerComparison& c) {
  const std::string peer = PeerName(c);
  std::vector<std::string> out;
  out.push_back("peer: " + peer + " (" + PeerDescription(c.kind) + ")");
  if (!c.fallback_reason.empty()) out.push_back("peer: " + peer + " because " + c.fallback_reason);
  std::string settings = "peer: " + peer + " " + c.binary;
  if (!c.build_commit.empty()) settings += " (build " + c.build_commit + ")";
  settings += ", " + std::to_string(c.threads) + " threads, KV " + c.kv + ", flash attention off, ubatch " +
              std::to_string(c.ubatch) + ", tg after " + std::to_string(c.pp) + " positions";
  if (c.kind == PeerKind::kLlamaBench) settings += ", -r " + std::to_string(c.peer_reps) + " per round";
  out.push_back(settings);
  const std::vector<Metric> metrics = Metrics(c);
  for (size_t i = 0; i < c.ember.size() && i < c.peer.size(); ++i) {
    std::string line = "round " + std::to_string(i + 1) + ":";
    for (const Metric& m : metrics) {
      const double e = c.ember[i].*m.field, p = c.peer[i].*m.field;
      line += "  " + m.name + " ember " + Fmt("%.1f", e) + " / " + peer + " " + Fmt("%.1f", p) + " = " +
              Fmt("%.2fx", p > 0 ? e / p : 0);
    }
    out.push_back(line);
  }
  for (const Metric& m : metrics) {
    const RatioSummary s = SummaryOf(c, m);
    out.push_back(m.name + ": ember " + Fmt("%.1f", s.ember) + " vs " + peer + " " + Fmt("%.1f", s.peer) +
                  " tok/s (medians of " + std::to_string(s.rounds.size()) + " rounds) -> ember / " + peer + " " +
                  Fmt("%.2fx", s.ratio) + " (rounds " + Fmt("%.2f", s.round_min) + "-" + Fmt("%.2fx", s.round_max) + ")");
  }
  return out;
}

std::string ComparisonMarkdown(const PeerComparison& c, const std::string& title) {
  const std::string peer = PeerName(c);
  std::string md = "### " + title + "\n\n";
  md += "Peer: " + PeerDescription(c.kind) + ".";
  if (!c.fallback_reason.empty()) md += " (Used because " + c.fallback_reason + ".)";
  md += "\n`" + c.binary + "`" + (c.build_commit.empty() ? "" : " build " + c.build_commit) + ", " +
        std::to_string(c.threads) + " threads, KV " + c.kv + ", flash attention off, ubatch " + std::to_string(c.ubatch) +
        ", decode after " + std::to_string(c.pp) + " positions; " + std::to_string(c.ember.size()) +
        " interleaved rounds after a warm-up round" +
        (c.kind == PeerKind::kLlamaBench ? " (llama-bench -r " + std::to_string(c.peer_reps) + " per round)" : "") + ".\n\n";
  md += "| metric | ember tok/s | " + peer + " tok/s | ember ÷ " + peer + " | per-round ratios |\n";
  md += "|---|---:|---:|---:|---|\n";
  for (const Metric& m : Metrics(c)) {
    const RatioSummary s = SummaryOf(c, m);
    std::string rounds;
    for (double r : s.rounds) rounds += (rounds.empty() ? "" : ", ") + Fmt("%.2f", r);
    md += "| " + m.name + " | " + Fmt("%.1f", s.ember) + " | " + Fmt("%.1f", s.peer) + " | **" + Fmt("%.2f×", s.ratio) +
          "** | " + Fmt("%.2f", s.round_min) + "–" + Fmt("%.2f×", s.round_max) + " (" + rounds + ") |\n";
  }
  return md + "\n";
}

}  // namespace ember::bench
