// Rendering of a PreflightReport: JSON for the eval DB and --json, a checklist for people.
#include <cstdio>

#include "bench/preflight.h"

namespace ember::bench {
namespace {

template <typename T>
nlohmann::json Opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json InfoJson(const MachineInfo& i) {
  return {{"hostname", i.hostname}, {"cpu_model", i.cpu_model}, {"cores", i.cores},
          {"ram_mb", i.ram_kb / 1024},  {"kernel", i.kernel},       {"governor", i.governor},
          {"boost", i.boost},           {"thp", i.thp},             {"gpu", i.gpu}};
}

const char* Mark(CheckState s) {
  switch (s) {
    case CheckState::kOk: return "[ok]  ";
    case CheckState::kProblem: return "[FAIL]";
    case CheckState::kInfo: return "[info]";
    case CheckState::kUnavailable: return "[n/a] ";
  }
  return "[?]   ";
}

}  // namespace

nlohmann::json PreflightToJson(const PreflightReport& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"name", c.name}, {"state", CheckStateName(c.state)}, {"detail", c.detail}});
  nlohmann::json foreign = nlohmann::json::array();
  for (const auto& f : r.foreign)
    foreign.push_back({{"pid", f.pid}, {"command", f.command.substr(0, 200)}, {"cpu_pct", f.cpu_pct},
                       {"rss_mb", f.rss_mb}, {"allowed", f.allowed}});
  return {{"ok", r.ok},
          {"at", r.at},
          {"window_s", r.window_s},
          {"problems", r.problems},
          {"checks", checks},
          {"foreign_processes", foreign},
          {"swap_used_mb", Opt(r.swap_used_mb)},
          {"swap_pages_moved", Opt(r.swap_pages_moved)},
          {"available_pct", Opt(r.available_pct)},
          {"memory_pressure_avg10", Opt(r.memory_pressure)},
          {"cpu_pressure_avg10", Opt(r.cpu_pressure)},
          {"load_per_core", Opt(r.load_ratio)},
          {"throttle_events_delta", Opt(r.throttle_events_delta)},
          {"model_resident_frac", Opt(r.model_resident_frac)},
          {"machine", InfoJson(r.info)}};
}

std::string PreflightToText(const PreflightReport& r) {
  std::string out = "preflight " + r.at + "\n";
  for (const auto& c : r.checks) out += std::string("  ") + Mark(c.state) + " " + c.name + ": " + c.detail + "\n";
  const MachineInfo& i = r.info;
  char ram[64];
  std::snprintf(ram, sizeof(ram), "%.1f GiB", static_cast<double>(i.ram_kb) / (1024.0 * 1024.0));
  out += "machine: " + (i.cpu_model.empty() ? std::string("unknown cpu") : i.cpu_model) + ", " +
         std::to_string(i.cores) + " cores, " + ram + " RAM, kernel " + i.kernel +
         (i.gpu.empty() ? "" : ", gpu " + i.gpu) + "\n";
  out += r.ok ? "CLEAR: fit to benchmark\n"
              : "PROBLEMS (" + std::to_string(r.problems.size()) + "): results would be tagged preflight-failed\n";
  return out;
}

}  // namespace ember::bench
