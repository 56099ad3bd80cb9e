// Reads the machine's state from /proc and /sys under a root directory: "/" in production, a recorded
// fixture tree in tests (tests/bench/fixtures/<machine>/t0, t1). This is the only file in the bench
// module that touches /proc or /sys; everything it reads goes through the pure parsers of proc_parse.h.
// Missing files are normal (containers, older kernels, non-x86 machines) and leave the field empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/proc_parse.h"

namespace ember::bench {

struct ProcessSample {
  PidStat stat;
  std::string cmdline;  // empty for kernel threads
};

// The part of the machine state that changes between two reads (deltas over the sampling window).
struct MachineSample {
  std::optional<MemInfo> mem;
  std::optional<SwapCounters> swap;
  std::optional<Pressure> memory_pressure;
  std::optional<Pressure> cpu_pressure;
  std::optional<double> load1;
  std::optional<uint64_t> throttle_events;  // sum of every cpu*/thermal_throttle/*_count
  std::vector<ProcessSample> processes;
};

// Recorded, not judged: identifies the machine a row came from.
struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  int cores = 0;
  uint64_t ram_kb = 0;
  std::string kernel;
  std::string governor;  // distinct scaling governors, comma-joined; empty without cpufreq
  std::string boost;     // "on", "off" or "" when the kernel does not expose it
  std::string thp;       // transparent huge pages mode, e.g. "madvise"
  std::string gpu;       // e.g. "nvidia 550.54 (1 gpu)" or "drm: 0x8086"; empty when none
};

MachineSample ReadMachineSample(const std::string& root);
MachineInfo ReadMachineInfo(const std::string& root);

// Reads a whole small file; nullopt when it cannot be opened.
std::optional<std::string> ReadSmallFile(const std::string& path);

}  // namespace ember::bench
