#include "bench/report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "bench/eval_format.h"
#include "bench/svg_plot.h"

namespace ember::bench {
namespace {

constexpr const char* kPeer = "llama.cpp";

struct Metric {
  const char* key;    // sample / column name
  const char* title;
  const char* unit;
  bool higher_is_faster;
  std::optional<double> EvalRow::*field;
};

const Metric kMetrics[] = {
    {"prefill_tok_s", "prefill", "tok/s (higher is faster)", true, &EvalRow::prefill_tok_s},
    {"decode_tok_s", "decode", "tok/s (higher is faster)", true, &EvalRow::decode_tok_s},
    {"ttft_ms", "TTFT", "ms (lower is faster)", false, &EvalRow::ttft_ms},
    {"ready_ms", "start -> ready", "ms (lower is faster)", false, &EvalRow::ready_ms},
};

std::string Fmt(const char* fmt, double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string ModelKey(const EvalRow& r) { return r.model_hash.value_or(r.model_path); }

bool Unstable(const EvalRow& r) { return r.tag.value_or("") == "unstable"; }
bool NotApplicable(const EvalRow& r) { return r.tag.value_or("") == "n/a"; }

// The reason an n/a row carries in its samples ([{"reason": "..."}]).
std::string NaReason(const EvalRow& r) {
  nlohmann::json s = nlohmann::json::parse(r.samples, nullptr, false);
  if (s.is_array() && !s.empty() && s[0].is_object() && s[0].contains("reason") && s[0]["reason"].is_string())
    return s[0]["reason"].get<std::string>();
  return "n/a";
}
bool PreflightFailed(const EvalRow& r) { return r.preflight_ok && !*r.preflight_ok; }

// A section is one leg at one thread count and shape: only rows within it are comparable.
struct SectionKey {
  std::string leg;
  int64_t threads, pp, tg;
  auto operator<=>(const SectionKey&) const = default;
};

SectionKey SectionOf(const EvalRow& r) {
  return {r.leg, r.threads.value_or(0), r.prompt_tokens.value_or(0), r.gen_tokens.value_or(0)};
}

// Latest row per (section, model, stack); rows arrive in id order, so later ones replace earlier.
using Cells = std::map<SectionKey, std::map<std::string, std::map<std::string, EvalRow>>>;

bool IsLoadLegRow(const EvalRow& r) { return r.leg == "concurrency" || r.leg == "agents"; }

Cells LatestCells(const std::vector<EvalRow>& rows, bool with_turns) {
  Cells cells;
  for (const auto& r : rows)
    if (r.turn.has_value() == with_turns && !IsLoadLegRow(r)) cells[SectionOf(r)][ModelKey(r)][r.stack] = r;
  return cells;
}

std::vector<std::string> StacksIn(const std::map<std::string, std::map<std::string, EvalRow>>& models) {
  std::set<std::string> s;
  for (const auto& [m, stacks] : models)
    for (const auto& [st, r] : stacks)
      if (r.tag.value_or("") != "n/a") s.insert(st);
  std::vector<std::string> out;
  if (s.count("ember")) out.push_back("ember");  // ember first, then the peers
  for (const auto& st : s)
    if (st != "ember") out.push_back(st);
  return out;
}

// "ember/llama.cpp 1.23x" (>1 always means ember is faster), or why there is no ratio.
std::string RatioNote(const std::map<std::string, EvalRow>& stacks, const Metric& m) {
  auto e = stacks.find("ember"), p = stacks.find(kPeer);
  if (e == stacks.end() || p == stacks.end()) return "";
  if (Unstable(e->second) || Unstable(p->second)) return "ratio withheld (unstable)";
  auto ev = e->second.*m.field, pv = p->second.*m.field;
  if (!ev || !pv || *ev <= 0 || *pv <= 0) return "";
  const double ratio = m.higher_is_faster ? *ev / *pv : *pv / *ev;
  return Fmt("ember %.2fx", ratio) + (m.higher_is_faster ? "" : " faster");
}

std::optional<std::string> MetricChart(const std::map<std::string, std::map<std::string, EvalRow>>& models,
                                       const Metric& m, const std::string& title) {
  BarChart chart{title + ": " + m.title, std::string(m.title) + " " + m.unit, StacksIn(models), {}, {}};
  for (size_t i = 0; i < chart.series.size(); ++i)  // ember blue, llama.cpp orange, others after
    chart.series_colours.push_back(chart.series[i] == "ember" ? 0 : chart.series[i] == kPeer ? 1 : 2 + i);
  bool any = false;
  for (const auto& [key, stacks] : models) {
    BarGroup g{BaseName(stacks.begin()->second.model_path), RatioNote(stacks, m), {}};
    for (const auto& st : chart.series) {
      auto it = stacks.find(st);
      if (it == stacks.end() || NotApplicable(it->second)) continue;
      const EvalRow& r = it->second;
      Bar b{st, (r.*m.field).value_or(std::nan("")), std::nullopt, std::nullopt, "", Unstable(r) || PreflightFailed(r)};
      any |= (r.*m.field).has_value();
      if (auto range = SampleRange(r.samples, m.key)) b.lo = range->first, b.hi = range->second;
      if (std::isfinite(b.value)) {
        b.label = Fmt(b.value >= 100 ? "%.0f" : "%.1f", b.value);
        if (r.tag.value_or("") == "stabilized") b.label += " s";
        if (Unstable(r)) b.label += " ?";
        if (PreflightFailed(r)) b.label += " \u2021";
      }
      g.bars.push_back(std::move(b));
    }
    chart.groups.push_back(std::move(g));
  }
  if (!any) return std::nullopt;
  return RenderBarChart(chart);
}

std::string Opt(const std::optional<double>& v, const char* fmt) { return v ? Fmt(fmt, *v) : "-"; }

std::string TableRows(const std::map<std::string, std::map<std::string, EvalRow>>& models) {
  std::string t =
      "| model | stack | version | prefill tok/s | decode tok/s | TTFT ms | peak RSS MB | runs | spread | tag | commit |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  for (const auto& [key, stacks] : models)
    for (const auto& [st, r] : stacks) {
      std::string tag = r.tag.value_or("-") + (PreflightFailed(r) ? " \u2021" : "");
      std::optional<double> rss;
      if (r.peak_rss_bytes) rss = static_cast<double>(*r.peak_rss_bytes) / (1024.0 * 1024.0);
      t += "| " + BaseName(r.model_path) + " | " + st + " | " + r.stack_version.value_or("-") + " | " +
           Opt(r.prefill_tok_s, "%.1f") + " | " + Opt(r.decode_tok_s, "%.2f") + " | " + Opt(r.ttft_ms, "%.1f") + " | " +
           Opt(rss, "%.0f") + " | " + (r.n_runs ? std::to_string(*r.n_runs) : "-") + " | " + Opt(r.spread, "%.3f") +
           " | " + tag + " | " + r.ember_commit.substr(0, 10) + (r.ember_dirty ? "+dirty" : "") + " |\n";
    }
  return t;
}

std::string SectionTitle(const SectionKey& k) {
  std::string t = k.leg + " leg, " + std::to_string(k.threads) + (k.threads == 1 ? " thread" : " threads");
  if (k.pp || k.tg) t += ", pp" + std::to_string(k.pp) + " tg" + std::to_string(k.tg);
  return t;
}

std::string Slug(const SectionKey& k) {
  return k.leg + "-t" + std::to_string(k.threads) + "-pp" + std::to_string(k.pp) + "-tg" + std::to_string(k.tg);
}

void AddBarSections(const Cells& cells, const ReportOptions& o, ReportFiles& out) {
  for (const auto& [sec, models] : cells) {
    out.markdown += "## " + SectionTitle(sec) + "\n\n";
    for (const Metric& m : kMetrics) {
      auto svg = MetricChart(models, m, SectionTitle(sec));
      if (!svg) continue;
      std::string name = Slug(sec) + "-" + m.key + ".svg";
      out.svgs.emplace_back(name, *svg);
      out.markdown += "![" + SectionTitle(sec) + ": " + m.title + "](" + o.plots_dir + "/" + name + ")\n\n";
    }
    out.markdown += TableRows(models) + "\n";
    for (const auto& [key, stacks] : models)
      for (const auto& [st, r] : stacks)
        if (NotApplicable(r)) out.markdown += "- " + BaseName(r.model_path) + ", " + st + ": " + NaReason(r) + "\n";
    out.markdown += "\n";
  }
}

void AddTurnSections(const std::vector<EvalRow>& rows, const ReportOptions& o, ReportFiles& out) {
  // model -> "stack leg" -> turn -> latest row
  std::map<std::string, std::map<std::string, std::map<int64_t, EvalRow>>> rows_of;
  std::map<std::string, std::map<std::string, std::map<int64_t, double>>> per_model;
  std::map<std::string, std::string> names;
  for (const auto& r : rows) {
    if (!r.turn || !r.ttft_ms) continue;
    per_model[ModelKey(r)][r.stack + " " + r.leg][*r.turn] = *r.ttft_ms;
    rows_of[ModelKey(r)][r.stack + " " + r.leg][*r.turn] = r;
    names[ModelKey(r)] = BaseName(r.model_path);
  }
  if (per_model.empty()) return;
  out.markdown += "## Cache legs: TTFT per turn\n\n";
  out.markdown +=
      "A scripted conversation, every stack fed the same token ids per turn. `cache-warm`: the prefix cache in "
      "RAM; `cache-restore`: each turn the first request after a restart (ember: SSD tier; llama.cpp: the "
      "sequence state file); `cache-cold`: no reuse. ember is measured through its HTTP server, the llama.cpp "
      "peer in-process (node-llama-cpp has no server), so the peer's TTFT carries no HTTP cost.\n\n";
  int n = 0;
  for (const auto& [key, series] : per_model) {
    LineChart chart{"TTFT per turn: " + names[key], "turn", "TTFT ms (lower is faster)", {}};
    for (const auto& [label, turns] : series) {
      LineSeries s{label, {}, {}};
      for (const auto& [turn, ttft] : turns) s.x.push_back(static_cast<double>(turn)), s.y.push_back(ttft);
      chart.series.push_back(std::move(s));
    }
    std::string name = "turns-" + std::to_string(n++) + ".svg";
    out.svgs.emplace_back(name, RenderLineChart(chart));
    out.markdown += "![TTFT per turn: " + names[key] + "](" + o.plots_dir + "/" + name + ")\n\n";
    // The figures behind the lines: TTFT ms (cached tokens / prompt tokens), tags marked.
    const auto& cells = rows_of[key];
    std::set<int64_t> all_turns;
    out.markdown += "| turn |";
    std::string sep = "|---:|";
    for (const auto& [label, turns] : cells) {
      out.markdown += " " + label + " |";
      sep += "---:|";
      for (const auto& [t, r] : turns) all_turns.insert(t);
    }
    out.markdown += "\n" + sep + "\n";
    for (int64_t t : all_turns) {
      out.markdown += "| " + std::to_string(t) + " |";
      for (const auto& [label, turns] : cells) {
        auto it = turns.find(t);
        if (it == turns.end()) {
          out.markdown += " - |";
          continue;
        }
        const EvalRow& r = it->second;
        std::string cell = Opt(r.ttft_ms, "%.1f");
        if (r.cached_tokens && r.prompt_tokens)
          cell += " (" + std::to_string(*r.cached_tokens) + "/" + std::to_string(*r.prompt_tokens) + ")";
        if (Unstable(r)) cell += " ?";
        else if (r.tag.value_or("") == "stabilized") cell += " s";
        if (PreflightFailed(r)) cell += " \u2021";
        out.markdown += " " + cell + " |";
      }
      out.markdown += "\n";
    }
    out.markdown += "\nCells: TTFT ms (cached / prompt tokens).\n\n";
  }
}

// Load legs (concurrency, agents): per leg and thread count, aggregate tok/s against client count per
// model (one line per stack) and a table of every level's figures; the latest row of each level.
void AddLoadSections(const std::vector<EvalRow>& rows, const ReportOptions& o, ReportFiles& out) {
  // (leg, threads) -> model -> stack -> clients -> latest row; n/a rows keep their reason.
  std::map<std::pair<std::string, int64_t>, std::map<std::string, std::map<std::string, std::map<int64_t, EvalRow>>>> secs;
  std::map<std::pair<std::string, int64_t>, std::vector<EvalRow>> na;
  for (const auto& r : rows) {
    if (!IsLoadLegRow(r)) continue;
    const auto key = std::make_pair(r.leg, r.threads.value_or(0));
    if (NotApplicable(r)) na[key].push_back(r);
    else if (r.clients) secs[key][ModelKey(r)][r.stack][*r.clients] = r;
  }
  int n = 0;
  for (const auto& [key, models] : secs) {
    const std::string title = key.first + " leg, " + std::to_string(key.second) + (key.second == 1 ? " thread" : " threads");
    out.markdown += "## " + title + "\n\n";
    out.markdown += key.first == "agents"
                        ? "Agents under one shared preamble, each with its own history, all at once; every stack "
                          "through the same HTTP client. Prompt tokens: sent / computed by the server (the rest came "
                          "from its cache; '?' where the server did not say).\n\n"
                        : "Concurrent streaming clients, each one greedy completion of a fixed length, through the "
                          "same HTTP client for every stack; aggregate = all completion tokens / wall time.\n\n";
    for (const auto& [model, stacks] : models) {
      if (key.first == "concurrency") {
        LineChart chart{title + ": " + BaseName(stacks.begin()->second.begin()->second.model_path), "concurrent clients",
                        "aggregate tok/s (higher is faster)", {}};
        for (const auto& [st, levels] : stacks) {
          LineSeries ls{st, {}, {}};
          for (const auto& [c, r] : levels)
            if (r.decode_tok_s) ls.x.push_back(static_cast<double>(c)), ls.y.push_back(*r.decode_tok_s);
          chart.series.push_back(std::move(ls));
        }
        const std::string name = "load-" + std::to_string(n++) + ".svg";
        out.svgs.emplace_back(name, RenderLineChart(chart));
        out.markdown += "![" + chart.title + "](" + o.plots_dir + "/" + name + ")\n\n";
      }
      out.markdown +=
          "| model | clients | stack | aggregate tok/s | TTFT p50 ms | TTFT p95 ms | wall ms | prompt tokens | runs | tag |\n"
          "|---|---:|---|---:|---:|---:|---:|---:|---:|---|\n";
      for (const auto& [st, levels] : stacks)
        for (const auto& [c, r] : levels) {
          std::string prompt = r.prompt_tokens ? std::to_string(*r.prompt_tokens) : "-";
          if (key.first == "agents")
            prompt += " / " + (r.cached_tokens && r.prompt_tokens ? std::to_string(*r.prompt_tokens - *r.cached_tokens)
                                                                  : std::string("?"));
          out.markdown += "| " + BaseName(r.model_path) + " | " + std::to_string(c) + " | " + st + " | " +
                          Opt(r.decode_tok_s, "%.1f") + " | " + Opt(r.ttft_ms, "%.0f") + " | " +
                          Opt(r.ttft_p95_ms, "%.0f") + " | " + Opt(r.wall_ms, "%.0f") + " | " + prompt + " | " +
                          (r.n_runs ? std::to_string(*r.n_runs) : "-") + " | " + r.tag.value_or("-") +
                          (PreflightFailed(r) ? " \u2021" : "") + " |\n";
        }
      out.markdown += "\n";
    }
    for (const auto& r : na[key]) out.markdown += "- " + BaseName(r.model_path) + ", " + r.stack + ": " + NaReason(r) + "\n";
    out.markdown += "\n";
  }
}

std::string MachineLine(const std::vector<EvalRow>& rows) {
  nlohmann::json s = nlohmann::json::parse(rows.back().machine_state, nullptr, false);
  if (s.is_discarded() || !s.is_object()) return "";
  // h2h stores {"before": preflight, "after": preflight}; a bare preflight JSON is accepted too.
  if (s.contains("before") && s["before"].is_object()) s = s["before"];
  if (!s.contains("machine") || !s["machine"].is_object()) return "";
  const auto& m = s["machine"];
  return "Machine (latest row): " + m.value("cpu_model", std::string("?")) + ", " +
         std::to_string(m.value("cores", 0)) + " cores, " + std::to_string(m.value("ram_mb", 0)) +
         " MB RAM, kernel " + m.value("kernel", std::string("?")) + ", governor " +
         (m.value("governor", std::string()).empty() ? std::string("n/a") : m.value("governor", std::string())) + ".\n\n";
}

}  // namespace

std::optional<std::pair<double, double>> SampleRange(const std::string& samples_json, const std::string& metric) {
  nlohmann::json s = nlohmann::json::parse(samples_json, nullptr, false);
  if (s.is_discarded() || !s.is_array()) return std::nullopt;
  std::optional<std::pair<double, double>> r;
  for (const auto& run : s) {
    if (!run.is_object() || !run.contains(metric) || !run[metric].is_number()) continue;
    double v = run[metric].get<double>();
    r = r ? std::make_pair(std::min(r->first, v), std::max(r->second, v)) : std::make_pair(v, v);
  }
  return r;
}

ReportFiles BuildReport(const std::vector<EvalRow>& rows, const ReportOptions& o) {
  ReportFiles out;
  out.markdown = "# ember benchmark report\n\nGenerated " + o.generated_at + " from `" + o.source + "` (" +
                 std::to_string(rows.size()) + " rows; the latest row of each cell is shown).\n\n";
  if (rows.empty()) {
    out.markdown += "No rows yet: run `ember h2h` first.\n";
    return out;
  }
  out.markdown += MachineLine(rows);
  out.markdown +=
      "Tags: `stable` runs agreed within 1.15x; `stabilized` needed extra rounds and reports the median of "
      "the 3 fastest (marked s); `unstable` never settled and its verdict is withheld (faded, marked ?). "
      "\u2021 = the machine failed preflight: the row counts for paired ratios, never for absolute figures "
      "(faded). Whiskers span the fastest and slowest run. Ratios are ember vs llama.cpp; above 1 means ember "
      "is faster.\n\n";
  AddBarSections(LatestCells(rows, false), o, out);
  AddTurnSections(rows, o, out);
  AddLoadSections(rows, o, out);
  return out;
}

std::string PlotsDirFor(const std::string& out_md) {
  std::filesystem::path p(out_md);
  return p.stem().string() + "-plots";
}

Status WriteReport(const ReportFiles& files, const std::string& out_md, const std::string& plots_dir) {
  namespace fs = std::filesystem;
  const fs::path md(out_md);
  const fs::path dir = md.parent_path() / plots_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("create " + dir.string() + ": " + ec.message());
  auto write = [](const fs::path& p, const std::string& text) -> Status {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    return f ? Status::Ok() : IoError("write " + p.string());
  };
  for (const auto& [name, svg] : files.svgs) EMBER_RETURN_IF_ERROR(write(dir / name, svg));
  return write(md, files.markdown);
}

}  // namespace ember::bench
