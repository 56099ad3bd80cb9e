// `ember h2h`: ember vs llama.cpp, cell by cell, stored in the eval DB (method: src/bench/h2h.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "bench/h2h.h"
#include "bench/llama_server.h"
#include "bench/preflight.h"
#include "bench/prompt_tokens.h"
#include "bench/served_bench.h"
#include "cli/command.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

struct H2hArgs {
  bench::H2hConfig cfg;
  std::vector<std::string> legs = {"direct"};
  std::vector<std::string> stacks = {"ember", "llama.cpp"};
  std::string db, node = "node", peer_runner = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
  std::string llama_server, llama_server_args, ember_serve_args;
  double timeout_s = 900;
  bool json = false, no_warmup = false, no_preflight = false;
  bench::PreflightLimits limits;
};

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "--a 1 --b" -> {"--a", "1", "--b"}: extra server flags, split on whitespace (no shell involved).
std::vector<std::string> SplitArgs(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string Fig(const nlohmann::json& j, const char* key, const char* fmt) {
  if (!j.contains(key) || !j[key].is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, j[key].get<double>());
  return buf;
}

// The load legs' figures under their cell line: one line per level.
void PrintFigures(const bench::CellOutcome& c) {
  if (!c.figures.is_array()) return;
  for (const auto& f : c.figures) {
    std::cout << "    " << (c.leg == "agents" ? "agents " : "clients ") << Fig(f, "clients", "%.0f")
              << "  aggregate " << Fig(f, "aggregate_tok_s", "%.1f") << " tok/s  TTFT p50 " << Fig(f, "ttft_p50_ms", "%.0f")
              << " ms  p95 " << Fig(f, "ttft_p95_ms", "%.0f") << " ms  wall " << Fig(f, "wall_ms", "%.0f") << " ms";
    if (c.leg == "agents")
      std::cout << "  prompt " << Fig(f, "prompt_tokens", "%.0f") << " tok, recomputed "
                << (f["recomputed_tokens"].is_number() ? Fig(f, "recomputed_tokens", "%.0f") : std::string("unknown"));
    std::cout << "  [" << f.value("tag", "") << "]\n";
  }
}

std::string SelfBinary() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ember") : (p.parent_path() / "ember").string();
}

int RunH2hCommand(H2hArgs& a) {
  for (const auto& l : a.legs) {
    auto leg = bench::ParseLeg(l);
    if (!leg) {
      std::fprintf(stderr, "ember h2h: unknown leg '%s'\n", l.c_str());
      return 2;
    }
    a.cfg.legs.push_back(*leg);
  }
  a.cfg.warmup = !a.no_warmup;
  const std::string db_path = a.db.empty() ? bench::DefaultEvalDbPath(EnvOr("XDG_DATA_HOME"), EnvOr("HOME")) : a.db;
  auto db = bench::EvalDb::Open(db_path);
  if (!db.ok()) {
    std::fprintf(stderr, "ember h2h: %s\n", db.status().ToString().c_str());
    return 2;
  }
  const std::string ember = SelfBinary();
  std::vector<std::unique_ptr<bench::StackRunner>> owned;
  for (const auto& s : a.stacks) {
    if (s == "ember") owned.push_back(bench::MakeEmberRunner(ember, a.timeout_s, SplitArgs(a.ember_serve_args)));
    else if (s == "llama.cpp") owned.push_back(bench::MakeLlamaCppRunner(a.node, a.peer_runner, a.timeout_s));
    else if (s == "llama-server") {
      const std::string bin = bench::FindLlamaServer(a.llama_server, EMBER_SOURCE_DIR);
      if (bin.empty() && !a.llama_server.empty()) {
        std::fprintf(stderr, "ember h2h: --llama-server %s is not an executable\n", a.llama_server.c_str());
        return 2;
      }
      owned.push_back(bench::MakeLlamaServerRunner({bin, SplitArgs(a.llama_server_args), a.timeout_s}));
    } else {
      std::fprintf(stderr, "ember h2h: unknown stack '%s' (ember, llama.cpp, llama-server)\n", s.c_str());
      return 2;
    }
  }
  bench::H2hEnv env;
  for (auto& s : owned) env.stacks.push_back(s.get());
  env.db = db->get();
  env.tokenize = [ember, &a](const std::string& model, int n) {
    auto ids = bench::TokenizeWithEmber(ember, model, n);
    if (ids.ok()) return ids;
    std::fprintf(stderr, "ember tokenize failed (%s); tokenizing with the llama.cpp peer\n", ids.status().message().c_str());
    return bench::TokenizeWithPeer(a.node, a.peer_runner, model, n);
  };
  env.conversation = [ember](const std::string& model, int turns) {
    return bench::BuildConversationIds(ember, model, turns);
  };
  if (!a.no_preflight) {
    env.preflight = [&a]() {
      auto r = bench::RunPreflight(a.limits, {});
      if (!r.ok()) return bench::PreflightSnapshot{false, {{"error", r.status().ToString()}}};
      return bench::PreflightSnapshot{r->ok, bench::PreflightToJson(*r)};
    };
  }
  env.revision = bench::ReadSourceRevision(EMBER_SOURCE_DIR);
  const int units = static_cast<int>(a.cfg.models.size() * a.cfg.legs.size() * owned.size()) *
                    (a.cfg.rounds + (a.cfg.warmup ? 1 : 0));
  ProgressBar progress("h2h", static_cast<uint64_t>(units), {.enabled = ShowProgress(a.json)});
  env.progress = &progress;
  env.log = [&progress](const std::string& s) { progress.Log(s); };  // above the bar, not inside it
  auto summary = bench::RunH2h(a.cfg, env);
  if (!summary.ok()) {
    std::fprintf(stderr, "ember h2h: %s\n", summary.status().ToString().c_str());
    return 2;
  }
  if (a.json) {
    std::cout << bench::H2hSummaryToJson(*summary).dump(2) << "\n";
  } else {
    for (const auto& c : summary->cells) {
      std::cout << c.model << "  " << c.stack << "  " << c.leg << "  " << c.status
                << (c.tag ? std::string("  [") + bench::StabilityTagName(*c.tag) + "]" : "") << "\n";
      PrintFigures(c);
    }
    std::cout << summary->stored << " stored, " << summary->skipped << " skipped, " << summary->failed
              << " failed -> " << db_path << "\n";
  }
  return summary->failed == 0 ? 0 : 1;
}

void SetupH2h(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<H2hArgs>();
  a->cfg.legs.clear();
  a->cfg.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CLI::App* cmd = app.add_subcommand("h2h", "Head-to-head benchmark: ember vs llama.cpp, stored in the eval DB");
  cmd->add_option("models", a->cfg.models, "GGUF model files")->required();
  cmd->add_option("--legs", a->legs,
                  "Legs to run: direct, served, cache-warm, cache-restore, cache-cold, concurrency, agents")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--stacks", a->stacks,
                  "Stacks in interleaving order: ember, llama.cpp (node-llama-cpp), llama-server (native, load legs)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--threads", a->cfg.threads, "Threads for every stack")->capture_default_str();
  cmd->add_option("--pp", a->cfg.prompt_tokens, "Prompt tokens")->capture_default_str();
  cmd->add_option("--tg", a->cfg.gen_tokens, "Generated tokens")->capture_default_str();
  cmd->add_option("--rounds", a->cfg.rounds, "Measured rounds per cell (median of N)")->capture_default_str();
  cmd->add_option("--turns", a->cfg.turns, "Cache legs: turns of the scripted conversation")->capture_default_str();
  cmd->add_option("--turn-tokens", a->cfg.turn_gen_tokens, "Cache legs: tokens generated per turn")
      ->capture_default_str();
  cmd->add_option("--clients", a->cfg.clients, "Concurrency leg: concurrent client counts, one level each")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--client-tokens", a->cfg.client_gen_tokens, "Concurrency leg: tokens each client decodes")
      ->capture_default_str();
  cmd->add_option("--client-prompt", a->cfg.client_prompt_tokens, "Concurrency leg: prompt ids per client")
      ->capture_default_str();
  cmd->add_option("--agents", a->cfg.agents, "Agents leg: concurrent agents")->capture_default_str();
  cmd->add_option("--agent-turns", a->cfg.agent_turns, "Agents leg: turns per agent")->capture_default_str();
  cmd->add_option("--agent-tokens", a->cfg.agent_gen_tokens, "Agents leg: tokens per reply")->capture_default_str();
  cmd->add_option("--preamble-tokens", a->cfg.preamble_tokens, "Agents leg: size of the shared policy preamble")
      ->capture_default_str();
  cmd->add_option("--llama-server", a->llama_server,
                  "llama-server binary for the llama-server stack (default: scripts/build-peer --print)");
  cmd->add_option("--llama-server-args", a->llama_server_args, "More llama-server flags, space-separated");
  cmd->add_option("--ember-serve-args", a->ember_serve_args,
                  "More `ember serve` flags for the load legs, space-separated (e.g. \"--parallel 8\")");
  cmd->add_flag("--redo", a->cfg.redo, "Measure cells already in the DB for this commit again");
  cmd->add_flag("--no-warmup", a->no_warmup, "Skip the discarded warm-up round (not for published numbers)");
  cmd->add_flag("--no-preflight", a->no_preflight, "Skip preflight snapshots (rows then carry no machine state)");
  cmd->add_option("--allow-cmd", a->limits.allow_cmds, "Preflight: exact command tolerated for CPU use");
  cmd->add_option("--db", a->db, "Eval DB file (default $XDG_DATA_HOME/ember/evals.sqlite)");
  cmd->add_option("--node", a->node, "node executable for the llama.cpp peer")->capture_default_str();
  cmd->add_option("--peer-runner", a->peer_runner, "The peer's runner.mjs")->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "Seconds one round may take")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the cell summary as JSON");
  cmd->callback([a, set_exit]() { set_exit(RunH2hCommand(*a)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("h2h", SetupH2h);

}  // namespace ember::cli
