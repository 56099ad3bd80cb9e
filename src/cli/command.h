// Subcommand registry: each src/cli/cmd_*.cc registers itself, so adding a command edits no shared file.
// Commands report their exit status through the callback's return value; they never call exit().
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace ember::cli {

// `setup` adds one subcommand to `app` and sets its callback; the callback returns the process exit code.
using CommandSetup = std::function<void(CLI::App& app, std::function<void(int)> set_exit)>;

bool RegisterCommand(const std::string& name, CommandSetup setup);

// Runs the CLI: parses argv, runs the chosen subcommand, returns the exit code.
int RunCli(int argc, char** argv);

}  // namespace ember::cli

#define EMBER_REGISTER_COMMAND(name, fn) \
  static const bool ember_registered_##fn = ::ember::cli::RegisterCommand(name, fn)
