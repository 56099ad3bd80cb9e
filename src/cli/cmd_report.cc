// `ember report`: render the eval DB as Markdown with SVG plots.
#include <cstdio>
#include <cstdlib>

#include "bench/eval_db.h"
#include "bench/preflight.h"
#include "bench/report.h"
#include "cli/command.h"

namespace ember::cli {
namespace {

struct ReportArgs {
  std::string db;
  std::string out = "report.md";
  std::string model, leg, since;
};

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int RunReport(const ReportArgs& a) {
  const std::string path = a.db.empty() ? bench::DefaultEvalDbPath(EnvOr("XDG_DATA_HOME"), EnvOr("HOME")) : a.db;
  auto db = bench::EvalDb::Open(path);
  if (!db.ok()) {
    std::fprintf(stderr, "ember report: %s\n", db.status().ToString().c_str());
    return 2;
  }
  bench::EvalFilter f;
  if (!a.model.empty()) f.model = a.model;
  if (!a.leg.empty()) f.leg = a.leg;
  if (!a.since.empty()) f.since = a.since;
  auto rows = (*db)->List(f);
  if (!rows.ok()) {
    std::fprintf(stderr, "ember report: %s\n", rows.status().ToString().c_str());
    return 2;
  }
  const std::string plots = bench::PlotsDirFor(a.out);
  bench::ReportFiles files = bench::BuildReport(*rows, {path, bench::UtcNowIso(), plots});
  if (Status st = bench::WriteReport(files, a.out, plots); !st.ok()) {
    std::fprintf(stderr, "ember report: %s\n", st.ToString().c_str());
    return 2;
  }
  std::printf("wrote %s (%zu rows, %zu plots in %s/)\n", a.out.c_str(), rows->size(), files.svgs.size(), plots.c_str());
  return 0;
}

void SetupReport(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Render the eval DB as a Markdown report with SVG plots");
  cmd->add_option("--db", a->db, "Eval DB file (default $XDG_DATA_HOME/ember/evals.sqlite)");
  cmd->add_option("--out", a->out, "Markdown file to write; plots go to <stem>-plots/ beside it")->capture_default_str();
  cmd->add_option("--model", a->model, "Only rows whose model path contains this (or whose hash equals it)");
  cmd->add_option("--leg", a->leg, "Only this leg");
  cmd->add_option("--since", a->since, "Only rows created at or after this UTC date/time");
  cmd->callback([a, set_exit]() { set_exit(RunReport(*a)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("report", SetupReport);

}  // namespace ember::cli
