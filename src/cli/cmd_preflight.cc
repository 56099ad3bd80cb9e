// `ember preflight`: is this machine fit to benchmark on? Exit 0 clear, 1 problems, 2 bad input.
#include <cstdio>
#include <iostream>

#include "bench/preflight.h"
#include "cli/command.h"

namespace ember::cli {
namespace {

struct PreflightArgs {
  bench::PreflightLimits limits;
  bench::PreflightOptions opts;
  bool json = false;
};

void SetupPreflight(CLI::App& app, std::function<void(int)> set_exit) {
  auto args = std::make_shared<PreflightArgs>();
  CLI::App* cmd = app.add_subcommand("preflight", "Check that the machine is fit to benchmark on (exit 0 clear, 1 problems)");
  auto& l = args->limits;
  cmd->add_flag("--json", args->json, "Print the machine state as JSON");
  cmd->add_option("--model", args->opts.model_path, "Model file: report how much of it is in the page cache");
  cmd->add_option("--max-swap-mb", l.max_swap_mb, "Swap in use above this (MB) is a problem")->capture_default_str();
  cmd->add_option("--min-available-pct", l.min_available_pct, "Minimum MemAvailable as % of RAM")->capture_default_str();
  cmd->add_option("--max-load-ratio", l.max_load_ratio, "Maximum 1-minute load per core")->capture_default_str();
  cmd->add_option("--max-pressure", l.max_pressure, "Maximum /proc/pressure some avg10 (%)")->capture_default_str();
  cmd->add_option("--cpu-pct", l.cpu_pct, "A foreign process at or above this CPU % is a problem")->capture_default_str();
  cmd->add_option("--big-rss-mb", l.big_rss_mb, "A foreign process at or above this RSS (MB) is a problem")
      ->capture_default_str();
  cmd->add_option("--allow-cmd", l.allow_cmds, "Exact command line tolerated for CPU use (repeatable; RSS limit still applies)");
  cmd->add_option("--window", args->opts.window_s, "Sampling window in seconds")->capture_default_str()->check(
      CLI::Range(0.1, 60.0));
  cmd->callback([args, set_exit]() {
    auto report = bench::RunPreflight(args->limits, args->opts);
    if (!report.ok()) {
      std::fprintf(stderr, "ember preflight: %s\n", report.status().ToString().c_str());
      set_exit(2);
      return;
    }
    if (args->json)
      std::cout << bench::PreflightToJson(*report).dump(2) << "\n";
    else
      std::cout << bench::PreflightToText(*report);
    set_exit(report->ok ? 0 : 1);
  });
}

}  // namespace

EMBER_REGISTER_COMMAND("preflight", SetupPreflight);

}  // namespace ember::cli
