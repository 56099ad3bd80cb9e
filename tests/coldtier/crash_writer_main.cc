// `ember_crash_writer`: the kill -9 victim and checker of scripts/cache-crash-loop (crash_writer.h), a test
// tool built beside the tests and never linked into `ember`.
//   ember_crash_writer write DIR [--seed N] [--cap 8M]   writes entries until killed (exit 1 on a setup error)
//   ember_crash_writer check DIR [--cap 8M]              "ok entries=N temp_deleted=M" (exit 0) or "FAIL why" (1)
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cache/cache_options.h"
#include "crash_writer.h"

namespace {

int Write(const std::string& dir, uint64_t seed, const std::string& cap) {
  ember::StatusOr<size_t> c = ember::ParseByteSize(cap);
  ember::Status st = c.ok() ? ember::RunCrashWriter(dir, seed, *c) : c.status();
  std::fprintf(stderr, "ember_crash_writer write: %s\n", st.ToString().c_str());
  return 1;  // RunCrashWriter returns only on an error
}

int Check(const std::string& dir, const std::string& cap) {
  ember::StatusOr<size_t> c = ember::ParseByteSize(cap);
  ember::StatusOr<ember::CrashCheck> r =
      c.ok() ? ember::VerifyCrashDir(*ember::Env::Default(), dir, *c) : ember::StatusOr<ember::CrashCheck>(c.status());
  if (!r.ok()) {
    std::printf("FAIL %s\n", r.status().ToString().c_str());
    return 1;
  }
  std::printf("ok entries=%llu temp_deleted=%llu\n", static_cast<unsigned long long>(r->entries),
              static_cast<unsigned long long>(r->temp_deleted));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember_crash_writer: the cold tier's kill -9 harness (a test tool; docs/coldtier.md)"};
  app.require_subcommand(1);
  std::string dir, cap = "4M";
  uint64_t seed = 1;
  int exit_code = 0;
  CLI::App* write = app.add_subcommand("write", "Write cache entries to DIR until killed");
  write->add_option("DIR", dir, "Directory")->required();
  write->add_option("--seed", seed, "Token-choice seed")->capture_default_str();
  write->add_option("--cap", cap, "Disk cap of the harness store")->capture_default_str();
  write->callback([&] { exit_code = Write(dir, seed, cap); });
  CLI::App* check = app.add_subcommand("check", "Check DIR as a restarting server would, after a killed writer");
  check->add_option("DIR", dir, "Directory")->required();
  check->add_option("--cap", cap, "Disk cap of the harness store")->capture_default_str();
  check->callback([&] { exit_code = Check(dir, cap); });
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
