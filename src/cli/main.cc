#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cli/command.h"

namespace ember::cli {
namespace {

std::map<std::string, CommandSetup>& Registry() {
  static std::map<std::string, CommandSetup> registry;
  return registry;
}

}  // namespace

bool RegisterCommand(const std::string& name, CommandSetup setup) {
  Registry()[name] = std::move(setup);
  return true;
}

int RunCli(int argc, char** argv) {
  CLI::App app{
      "ember: a native LLM inference server with a tiered (RAM -> SSD) prefix KV cache.\n"
      "Run `ember <command> --help` for the options of each command."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every command");
  int exit_code = 0;
  auto set_exit = [&exit_code](int code) { exit_code = code; };
  for (auto& [name, setup] : Registry()) setup(app, set_exit);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}

}  // namespace ember::cli

int main(int argc, char** argv) { return ember::cli::RunCli(argc, argv); }
