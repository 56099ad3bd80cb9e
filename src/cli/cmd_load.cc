// `ember load`: serving load against a running ember server on loopback (closed and open loop).
#include <cstdio>
#include <iostream>

#include "bench/load_client.h"
#include "cli/command.h"

namespace ember::cli {
namespace {

struct LoadArgs {
  bench::LoadConfig cfg;
  bool json = false;
};

void SetupLoad(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<LoadArgs>();
  auto& c = a->cfg;
  CLI::App* cmd = app.add_subcommand("load", "Serving load test against a local ember server (loopback only); exit 1 on any error");
  cmd->add_option("--host", c.host, "Server host (loopback only)")->capture_default_str();
  cmd->add_option("--port", c.port, "Server port")->capture_default_str();
  cmd->add_option("--model", c.model, "`model` field of each request")->capture_default_str();
  cmd->add_option("--prompt", c.prompt, "User message of each request")->capture_default_str();
  cmd->add_option("--max-tokens", c.max_tokens, "max_tokens of each request")->capture_default_str();
  cmd->add_option("--concurrency", c.concurrency, "Closed-loop levels: requests in flight, e.g. 1,2,4,8")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--rpm", c.rpm, "Open-loop levels: requests started per minute, e.g. 30,60,120")->delimiter(',');
  cmd->add_option("--requests", c.requests_per_level, "Requests per level")->capture_default_str();
  cmd->add_option("--timeout", c.request_timeout_s, "Seconds one request may take")->capture_default_str();
  cmd->add_option("--max-seconds", c.max_total_s, "Time budget for the whole run")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  cmd->callback([a, set_exit]() {
    auto rep = bench::RunLoad(a->cfg);
    if (!rep.ok()) {
      std::fprintf(stderr, "ember load: %s\n", rep.status().ToString().c_str());
      set_exit(2);
      return;
    }
    if (a->json)
      std::cout << bench::LoadReportToJson(*rep).dump(2) << "\n";
    else
      std::cout << bench::LoadReportToText(*rep);
    set_exit(rep->total_errors == 0 ? 0 : 1);
  });
}

}  // namespace

EMBER_REGISTER_COMMAND("load", SetupLoad);

}  // namespace ember::cli
