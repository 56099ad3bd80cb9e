// `ember evals`: list and filter the eval DB.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "bench/eval_db.h"
#include "bench/eval_format.h"
#include "cli/command.h"

namespace ember::cli {
namespace {

struct EvalsArgs {
  std::string db, model, stack, leg, since, commit;
  int64_t threads = 0;
  int64_t limit = 0;
  bool json = false;
};

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int RunEvals(const EvalsArgs& a) {
  const std::string path = a.db.empty() ? bench::DefaultEvalDbPath(EnvOr("XDG_DATA_HOME"), EnvOr("HOME")) : a.db;
  auto db = bench::EvalDb::Open(path);
  if (!db.ok()) {
    std::fprintf(stderr, "ember evals: %s\n", db.status().ToString().c_str());
    return 2;
  }
  bench::EvalFilter f;
  if (!a.model.empty()) f.model = a.model;
  if (!a.stack.empty()) f.stack = a.stack;
  if (!a.leg.empty()) f.leg = a.leg;
  if (!a.since.empty()) f.since = a.since;
  if (!a.commit.empty()) f.commit = a.commit;
  if (a.threads > 0) f.threads = a.threads;
  f.limit = a.limit;
  auto rows = (*db)->List(f);
  if (!rows.ok()) {
    std::fprintf(stderr, "ember evals: %s\n", rows.status().ToString().c_str());
    return 2;
  }
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *rows) out.push_back(bench::EvalRowToJson(r));
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "# " << path << ": " << rows->size() << " row(s); \u2021 = preflight failed (ratios only)\n"
              << bench::FormatEvalTable(*rows);
  }
  return 0;
}

void SetupEvals(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<EvalsArgs>();
  CLI::App* cmd = app.add_subcommand("evals", "List and filter benchmark rows of the eval DB");
  cmd->add_option("--db", a->db, "Eval DB file (default $XDG_DATA_HOME/ember/evals.sqlite)");
  cmd->add_option("--model", a->model, "Rows whose model path contains this, or whose model hash equals it");
  cmd->add_option("--stack", a->stack, "Stack: ember or llama.cpp");
  cmd->add_option("--leg", a->leg, "Leg: direct, served, cache-warm, cache-restore, cache-cold");
  cmd->add_option("--since", a->since, "Rows created at or after this UTC date/time (e.g. 2026-11-29)");
  cmd->add_option("--commit", a->commit, "Rows measured at this ember commit (prefix)");
  cmd->add_option("--threads", a->threads, "Rows measured with this thread count");
  cmd->add_option("--limit", a->limit, "At most this many rows");
  cmd->add_flag("--json", a->json, "Print rows as a JSON array");
  cmd->callback([a, set_exit]() { set_exit(RunEvals(*a)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("evals", SetupEvals);

}  // namespace ember::cli
