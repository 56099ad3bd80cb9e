#include "bench/machine_probe.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ember::bench {
namespace fs = std::filesystem;
namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Directory entries of `dir` whose name starts with `prefix` followed by a digit (cpu0, card1, ...).
std::vector<fs::path> NumberedEntries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        AllDigits(name.substr(prefix.size())))
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<uint64_t> SumThrottleCounters(const fs::path& cpu_dir) {
  std::optional<uint64_t> total;
  for (const auto& cpu : NumberedEntries(cpu_dir, "cpu")) {
    std::error_code ec;
    for (fs::directory_iterator it(cpu / "thermal_throttle", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() < 6 || name.compare(name.size() - 6, 6, "_count") != 0) continue;
      auto text = ReadSmallFile(it->path().string());
      if (!text) continue;
      total = total.value_or(0) + std::strtoull(Trim(*text).c_str(), nullptr, 10);
    }
  }
  return total;
}

std::vector<ProcessSample> ReadProcesses(const fs::path& proc) {
  std::vector<ProcessSample> out;
  std::error_code ec;
  for (fs::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    if (!AllDigits(it->path().filename().string())) continue;
    // A process may exit between listing and reading: skip it silently.
    auto stat_text = ReadSmallFile((it->path() / "stat").string());
    if (!stat_text) continue;
    auto stat = ParsePidStat(*stat_text);
    if (!stat) continue;
    auto cmd = ReadSmallFile((it->path() / "cmdline").string());
    out.push_back({*stat, cmd ? ParseCmdline(*cmd) : std::string()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.stat.pid < b.stat.pid; });
  return out;
}

std::string ReadGovernors(const fs::path& cpu_dir) {
  std::set<std::string> govs;
  for (const auto& cpu : NumberedEntries(cpu_dir, "cpu"))
    if (auto g = ReadSmallFile((cpu / "cpufreq" / "scaling_governor").string())) govs.insert(Trim(*g));
  std::string out;
  for (const auto& g : govs) out += (out.empty() ? "" : ",") + g;
  return out;
}

std::string ReadBoost(const fs::path& cpu_dir) {
  if (auto b = ReadSmallFile((cpu_dir / "cpufreq" / "boost").string())) return Trim(*b) == "1" ? "on" : "off";
  // intel_pstate inverts the sense: no_turbo=1 means boost is off.
  if (auto n = ReadSmallFile((cpu_dir / "intel_pstate" / "no_turbo").string())) return Trim(*n) == "1" ? "off" : "on";
  return "";
}

std::string ReadGpu(const fs::path& root) {
  if (auto v = ReadSmallFile((root / "proc/driver/nvidia/version").string())) {
    std::string first = Trim(v->substr(0, v->find('\n')));
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(root / "proc/driver/nvidia/gpus", ec), end; !ec && it != end; it.increment(ec)) ++n;
    return "nvidia: " + first + " (" + std::to_string(n) + " gpu)";
  }
  std::string vendors;
  for (const auto& card : NumberedEntries(root / "sys/class/drm", "card"))
    if (auto v = ReadSmallFile((card / "device" / "vendor").string())) {
      if (!vendors.empty()) vendors += ',';
      vendors += Trim(*v);
    }
  return vendors.empty() ? "" : "drm: " + vendors;
}

}  // namespace

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

MachineSample ReadMachineSample(const std::string& root_dir) {
  const fs::path root(root_dir);
  MachineSample s;
  auto read = [&](const char* rel) { return ReadSmallFile((root / rel).string()); };
  if (auto t = read("proc/meminfo")) s.mem = ParseMeminfo(*t);
  if (auto t = read("proc/vmstat")) s.swap = ParseVmstat(*t);
  if (auto t = read("proc/pressure/memory")) s.memory_pressure = ParsePressure(*t);
  if (auto t = read("proc/pressure/cpu")) s.cpu_pressure = ParsePressure(*t);
  if (auto t = read("proc/loadavg")) s.load1 = ParseLoadavg1(*t);
  s.throttle_events = SumThrottleCounters(root / "sys/devices/system/cpu");
  s.processes = ReadProcesses(root / "proc");
  return s;
}

MachineInfo ReadMachineInfo(const std::string& root_dir) {
  const fs::path root(root_dir);
  const fs::path cpu_dir = root / "sys/devices/system/cpu";
  MachineInfo info;
  auto read = [&](const fs::path& p) { return ReadSmallFile(p.string()); };
  if (auto t = read(root / "proc/sys/kernel/hostname")) info.hostname = Trim(*t);
  if (auto t = read(root / "proc/sys/kernel/osrelease")) info.kernel = Trim(*t);
  if (auto t = read(root / "proc/cpuinfo")) info.cpu_model = ParseCpuModel(*t);
  if (auto t = read(cpu_dir / "online")) info.cores = ParseCpuListCount(*t).value_or(0);
  if (auto t = read(root / "proc/meminfo"))
    if (auto m = ParseMeminfo(*t)) info.ram_kb = m->total_kb;
  if (auto t = read(root / "sys/kernel/mm/transparent_hugepage/enabled")) info.thp = ParseBracketedMode(*t);
  info.governor = ReadGovernors(cpu_dir);
  info.boost = ReadBoost(cpu_dir);
  info.gpu = ReadGpu(root);
  return info;
}

}  // namespace ember::bench
