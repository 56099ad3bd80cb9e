#include "bench/report.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/svg_plot.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

namespace fs = std::filesystem;

EvalRow Row(const std::string& model, const std::string& stack, double prefill, double decode,
            const std::string& tag, bool preflight_ok = true) {
  EvalRow r;
  r.created_at = "2026-11-29T20:00:00Z";
  r.ember_commit = "0123456789abcdef";
  r.stack = stack;
  r.stack_version = stack == "ember" ? "0.1.0" : "3.21.1";
  r.model_path = "/models/" + model;
  r.model_hash = model + "-hash";
  r.leg = "direct";
  r.threads = 2;
  r.prompt_tokens = 512;
  r.gen_tokens = 128;
  r.prefill_tok_s = prefill;
  r.decode_tok_s = decode;
  r.n_runs = 5;
  r.spread = 1.04;
  r.tag = tag;
  r.preflight_ok = preflight_ok;
  r.machine_state = R"({"before":{"ok":true,"machine":{"cpu_model":"AMD EPYC","cores":2,"ram_mb":24000,)"
                    R"("kernel":"6.18","governor":"performance"}},"after":{"ok":true}})";
  nlohmann::json samples = nlohmann::json::array();
  for (double f : {0.97, 1.0, 1.02})
    samples.push_back({{"prefill_tok_s", prefill * f}, {"decode_tok_s", decode * f}});
  r.samples = samples.dump();
  return r;
}

std::vector<EvalRow> SampleRows() {
  std::vector<EvalRow> rows = {Row("tiny-q8_0.gguf", "ember", 400, 50, "stable"),
                               Row("tiny-q8_0.gguf", "llama.cpp", 355, 38, "stabilized"),
                               Row("small-q4_0.gguf", "ember", 120, 20, "unstable", false),
                               Row("small-q4_0.gguf", "llama.cpp", 110, 18, "stable")};
  for (int turn = 1; turn <= 4; ++turn)
    for (const char* leg : {"cache-warm", "cache-cold"}) {
      EvalRow r = Row("tiny-q8_0.gguf", "ember", 0, 0, "stable");
      r.leg = leg;
      r.turn = turn;
      r.prefill_tok_s.reset();
      r.decode_tok_s.reset();
      r.ttft_ms = std::string(leg) == "cache-warm" ? 40.0 + turn : 200.0 * turn;
      r.cached_tokens = std::string(leg) == "cache-warm" ? 100 * (turn - 1) : 0;
      r.prompt_tokens = 100 * turn;
      rows.push_back(r);
    }
  // The served leg: ember alone, the peer n/a with its reason.
  EvalRow served = Row("tiny-q8_0.gguf", "ember", 0, 45, "stable");
  served.leg = "served";
  served.prefill_tok_s.reset();
  served.ttft_ms = 120;
  served.ready_ms = 310;
  served.samples = R"([{"decode_tok_s": 44, "ttft_ms": 118, "ready_ms": 300}, {"decode_tok_s": 46, "ttft_ms": 125, "ready_ms": 320}])";
  rows.push_back(served);
  EvalRow na = Row("tiny-q8_0.gguf", "llama.cpp", 0, 0, "n/a");
  na.leg = "served";
  na.prefill_tok_s.reset();
  na.decode_tok_s.reset();
  na.n_runs = 0;
  na.samples = R"([{"reason": "n/a: no HTTP server in the binding"}])";
  rows.push_back(na);
  return rows;
}

TEST(SvgPlot, EscapesAndNiceAxis) {
  EXPECT_EQ(XmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_DOUBLE_EQ(NiceCeil(87), 100);
  EXPECT_DOUBLE_EQ(NiceCeil(0.3), 0.5);
  EXPECT_DOUBLE_EQ(NiceCeil(2.2), 2.5);
  EXPECT_DOUBLE_EQ(NiceCeil(0), 1);
}

TEST(SvgPlot, BarChartHasBarsWhiskersAndLabels) {
  BarChart c{"t", "tok/s", {"ember", "llama.cpp"}, {}, {}};
  c.groups.push_back({"m<1>", "ember 1.2x", {{"ember", 10, 9, 11, "", false}, {"llama.cpp", 8, {}, {}, "", true}}});
  std::string svg = RenderBarChart(c);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("m&lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("fill-opacity=\"0.35\""), std::string::npos);  // faded bar
  EXPECT_NE(svg.find("ember 1.2x"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST(SampleRange, MinMaxOfOneMetric) {
  auto r = SampleRange(R"([{"decode_tok_s": 3}, {"decode_tok_s": 1.5}, {"prefill_tok_s": 99}])", "decode_tok_s");
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->first, 1.5);
  EXPECT_DOUBLE_EQ(r->second, 3);
  EXPECT_FALSE(SampleRange("not json", "decode_tok_s"));
  EXPECT_FALSE(SampleRange("[]", "decode_tok_s"));
}

TEST(Report, MarkdownLinksEveryPlotAndStatesRatiosAndTags) {
  ReportFiles f = BuildReport(SampleRows(), {"/tmp/evals.sqlite", "2026-11-29T21:00:00Z", "report-plots"});
  // direct: prefill + decode charts (no TTFT column); served: TTFT, decode, start -> ready; one per-turn
  // chart for the cache legs.
  ASSERT_EQ(f.svgs.size(), 6u);
  for (const auto& [name, svg] : f.svgs)
    EXPECT_NE(f.markdown.find("(report-plots/" + name + ")"), std::string::npos) << name;
  EXPECT_NE(f.markdown.find("## direct leg, 2 threads, pp512 tg128"), std::string::npos);
  EXPECT_NE(f.markdown.find("## Cache legs: TTFT per turn"), std::string::npos);
  EXPECT_NE(f.markdown.find("unstable \u2021"), std::string::npos);
  EXPECT_NE(f.markdown.find("AMD EPYC"), std::string::npos);
  const std::string& decode_svg = f.svgs[1].second;
  EXPECT_NE(decode_svg.find("ember 1.32x"), std::string::npos);            // 50 / 38
  EXPECT_NE(decode_svg.find("ratio withheld (unstable)"), std::string::npos);
  EXPECT_NE(f.svgs[5].second.find("ember cache-cold"), std::string::npos);
  EXPECT_NE(f.markdown.find("## served leg, 2 threads"), std::string::npos);
  EXPECT_NE(f.markdown.find("llama.cpp: n/a: no HTTP server in the binding"), std::string::npos);
  EXPECT_NE(f.svgs[4].first.find("ready_ms"), std::string::npos);
  EXPECT_NE(f.svgs[4].second.find(">310<"), std::string::npos);               // the bar's label
  EXPECT_EQ(f.svgs[3].second.find("llama.cpp"), std::string::npos);          // no bar for the n/a row
  EXPECT_NE(f.markdown.find("| 3 | 600.0 (0/300) | 43.0 (200/300) |"), std::string::npos);
}

TEST(Report, StackKeepsItsColourWhenAlone) {
  ReportFiles f = BuildReport({Row("tiny-q8_0.gguf", "llama.cpp", 355, 38, "stable")}, {"db", "now", "p"});
  ASSERT_FALSE(f.svgs.empty());
  EXPECT_NE(f.svgs[0].second.find("fill=\"#E69F00\""), std::string::npos);   // llama.cpp orange
  EXPECT_EQ(f.svgs[0].second.find("fill=\"#0072B2\""), std::string::npos);   // not ember's blue
  EXPECT_NE(f.markdown.find("2 threads"), std::string::npos);
}

TEST(Report, LoadLegsGetOneTableRowPerLevelNotOneBarPerStack) {
  std::vector<EvalRow> rows;
  for (const char* stack : {"ember", "llama-server"})
    for (int c : {1, 2, 4, 8}) {
      EvalRow r = Row("tiny-q8_0.gguf", stack, 0, 0, "stable");
      r.leg = "concurrency";
      r.clients = c;
      r.prefill_tok_s.reset();
      r.decode_tok_s = (std::string(stack) == "ember" ? 37.0 : 30.0) * c;
      r.ttft_ms = 100.0 + c;
      r.ttft_p95_ms = 200.0 + c;
      r.wall_ms = 3000;
      r.prompt_tokens = 64;
      rows.push_back(r);
    }
  EvalRow a = Row("tiny-q8_0.gguf", "llama-server", 0, 0, "stable");
  a.leg = "agents";
  a.clients = 4;
  a.wall_ms = 90000;
  a.ttft_ms = 1500;
  a.prompt_tokens = 7000;  // cached_tokens unknown
  a.decode_tok_s.reset();
  a.prefill_tok_s.reset();
  rows.push_back(a);
  ReportFiles f = BuildReport(rows, {"db", "now", "r-plots"});
  EXPECT_EQ(f.markdown.find("## concurrency leg, 2 threads, pp"), std::string::npos) << "load rows in a bar section";
  EXPECT_NE(f.markdown.find("## concurrency leg, 2 threads\n"), std::string::npos);
  EXPECT_NE(f.markdown.find("| tiny-q8_0.gguf | 8 | llama-server | 240.0 | 108 | 208 | 3000 | 64 |"), std::string::npos)
      << f.markdown;
  EXPECT_NE(f.markdown.find("| tiny-q8_0.gguf | 4 | llama-server | - | 1500 | - | 90000 | 7000 / ? |"), std::string::npos);
  ASSERT_EQ(f.svgs.size(), 1u);  // aggregate tok/s against clients, one line per stack
  EXPECT_NE(f.svgs[0].second.find("llama-server"), std::string::npos);
}

TEST(Report, EmptyDbSaysSo) {
  ReportFiles f = BuildReport({}, {"db", "now", "p"});
  EXPECT_TRUE(f.svgs.empty());
  EXPECT_NE(f.markdown.find("No rows yet"), std::string::npos);
}

// Builds a page that parses each SVG the Markdown links as strict XML (image/svg+xml: a malformed file
// shows up as a parsererror, which lenient HTML parsing would hide), inserts it, and measures what
// Chromium laid out: painted shapes with non-zero geometry and the drawing's bounding box.
std::string RenderPage(const std::vector<std::string>& svgs) {
  nlohmann::json list = svgs;
  std::string js = list.dump();
  // Keep "</script>" from ending the script early.
  js = std::regex_replace(js, std::regex("</"), "<\\/");
  return "<!doctype html><html><body><div id=\"plots\"></div><pre id=\"result\"></pre><script>\n"
         "const svgs = " + js + ";\n"
         "const out = [];\n"
         "for (const text of svgs) {\n"
         "  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');\n"
         "  if (doc.getElementsByTagName('parsererror').length) { out.push('PARSEERROR'); continue; }\n"
         "  const svg = document.importNode(doc.documentElement, true);\n"
         "  document.getElementById('plots').appendChild(svg);\n"
         "  let shapes = 0; let texts = 0;\n"
         "  for (const el of svg.querySelectorAll('rect,line,polyline,circle')) {\n"
         "    const b = el.getBBox(); if (b.width > 0 || b.height > 0) shapes++; }\n"
         "  for (const el of svg.querySelectorAll('text')) { if (el.getComputedTextLength() > 0) texts++; }\n"
         "  const r = svg.getBoundingClientRect();\n"
         "  out.push('svg ' + shapes + ' ' + texts + ' ' + Math.round(r.width) + ' ' + Math.round(r.height));\n"
         "}\n"
         "document.getElementById('result').textContent = 'RESULT ' + out.join(';') + ' END';\n"
         "</script></body></html>\n";
}

std::vector<std::string> ChromiumArgs(const fs::path& profile) {
  return {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--user-data-dir=" + profile.string()};
}

TEST(ReportRender, ChromiumDrawsEveryPlot) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("report_render_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string md_path = (dir / "report.md").string();
  ReportFiles f = BuildReport(SampleRows(), {"db", "now", PlotsDirFor(md_path)});
  ASSERT_TRUE(WriteReport(f, md_path, PlotsDirFor(md_path)).ok());
  // Follow the Markdown's own links, as a viewer would.
  std::ifstream md(md_path);
  std::stringstream ss;
  ss << md.rdbuf();
  const std::string text = ss.str();
  std::vector<std::string> svgs;
  std::regex link(R"(!\[[^\]]*\]\(([^)]+\.svg)\))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
    std::ifstream in(dir / (*it)[1].str());
    ASSERT_TRUE(in) << "linked plot missing: " << (*it)[1].str();
    std::stringstream s;
    s << in.rdbuf();
    svgs.push_back(s.str());
  }
  ASSERT_EQ(svgs.size(), 6u);
  std::ofstream(dir / "page.html") << RenderPage(svgs);
  // No skip when chromium is missing: the render check is part of the contract (scripts/setup installs it).
  std::vector<std::string> args = ChromiumArgs(dir / "profile");
  args.push_back("--dump-dom");
  args.push_back("file://" + (dir / "page.html").string());
  auto run = RunProcess(args, 90);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->exit_code, 0) << "chromium failed (is Debian `chromium` installed?): " << run->err.substr(0, 2000);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run->out, m, std::regex("RESULT (.*) END"))) << run->out.substr(0, 2000);
  std::vector<std::string> parts;
  std::stringstream rs(m[1].str());
  for (std::string p; std::getline(rs, p, ';');) parts.push_back(p);
  ASSERT_EQ(parts.size(), svgs.size());
  for (const auto& p : parts) {
    int shapes = 0, texts = 0, w = 0, h = 0;
    ASSERT_EQ(std::sscanf(p.c_str(), "svg %d %d %d %d", &shapes, &texts, &w, &h), 4) << p;
    EXPECT_GE(shapes, 8) << p;   // background, grid, bars or points, whiskers, legend swatches
    EXPECT_GE(texts, 6) << p;    // title, ticks, labels, legend
    EXPECT_GT(w, 200) << p;
    EXPECT_GT(h, 200) << p;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::bench
