// `ember report`: a Markdown report over the eval DB with SVG plots ember draws itself (svg_plot.h).
// The Markdown references the plots as files in a sibling folder (<stem>-plots/), which renders in
// browsers, Markdown previewers and on code hosts that strip inline SVG.
//
// What it shows, per leg and thread count: prefill / decode / TTFT bars per model and stack, with
// min..max whiskers from the per-run samples, the ember-vs-peer ratio under each model (withheld when
// either side is `unstable`), faded bars for unstable or preflight-failed rows, and per-turn TTFT
// lines for cache legs. Only the latest row of each cell is shown.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/eval_db.h"
#include "util/status.h"

namespace ember::bench {

struct ReportOptions {
  std::string source;        // the DB path, printed in the header
  std::string generated_at;  // ISO-8601 UTC
  std::string plots_dir;     // folder name the Markdown links to, relative to the .md file
};

struct ReportFiles {
  std::string markdown;
  std::vector<std::pair<std::string, std::string>> svgs;  // file name (inside plots_dir) -> SVG text
};

// Pure: rows in, documents out.
ReportFiles BuildReport(const std::vector<EvalRow>& rows, const ReportOptions& opts);

// Writes `files` as `out_md` plus `<dir of out_md>/<plots_dir>/*.svg`.
Status WriteReport(const ReportFiles& files, const std::string& out_md, const std::string& plots_dir);

// "<stem>-plots" for "/x/report.md".
std::string PlotsDirFor(const std::string& out_md);

// Min and max of one metric over a row's per-run samples JSON ([{"decode_tok_s": ..}, ...]).
std::optional<std::pair<double, double>> SampleRange(const std::string& samples_json, const std::string& metric);

}  // namespace ember::bench
