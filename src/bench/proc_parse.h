// Pure parsers for the Linux files preflight reads (/proc and /sys). Each takes the file's contents
// and returns native values, so tests run on recorded fixtures from healthy, swapping, overloaded and
// busy machines. A malformed file yields std::nullopt (or an empty field), never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember::bench {

struct MemInfo {
  uint64_t total_kb = 0;
  uint64_t available_kb = 0;
  uint64_t swap_total_kb = 0;
  uint64_t swap_free_kb = 0;
  uint64_t swap_used_kb() const { return swap_total_kb > swap_free_kb ? swap_total_kb - swap_free_kb : 0; }
};
// /proc/meminfo; nullopt unless MemTotal and MemAvailable are present.
std::optional<MemInfo> ParseMeminfo(std::string_view text);

struct SwapCounters {
  uint64_t pswpin = 0;   // pages swapped in since boot
  uint64_t pswpout = 0;  // pages swapped out since boot
};
// /proc/vmstat; nullopt when the counters are absent.
std::optional<SwapCounters> ParseVmstat(std::string_view text);

struct Pressure {
  double some_avg10 = 0;  // % of the last 10 s in which at least one task stalled on the resource
  double full_avg10 = 0;  // % in which all non-idle tasks stalled (absent for cpu on older kernels)
};
// /proc/pressure/{cpu,memory}; nullopt when the "some" line is missing.
std::optional<Pressure> ParsePressure(std::string_view text);

// 1-minute load average from /proc/loadavg.
std::optional<double> ParseLoadavg1(std::string_view text);

struct PidStat {
  int pid = 0;
  std::string comm;
  int ppid = 0;
  uint64_t cpu_ticks = 0;    // utime + stime, in clock ticks
  uint64_t start_ticks = 0;  // start time after boot: tells a reused pid from the same process
  uint64_t rss_pages = 0;
};
// /proc/[pid]/stat. The comm field may itself contain spaces and parentheses, so the fields after it
// are located from the *last* ')'.
std::optional<PidStat> ParsePidStat(std::string_view text);

// /proc/[pid]/cmdline: NUL-separated argv joined with single spaces; empty for kernel threads.
std::string ParseCmdline(std::string_view bytes);

// CPU list syntax of /sys/devices/system/cpu/online ("0-3,6,8-9") -> number of CPUs; nullopt if bad.
std::optional<int> ParseCpuListCount(std::string_view text);

// First "model name" of /proc/cpuinfo; empty when absent (some ARM kernels).
std::string ParseCpuModel(std::string_view cpuinfo);

// The bracketed choice of a sysfs mode file ("always [madvise] never" -> "madvise"); the trimmed text
// when nothing is bracketed.
std::string ParseBracketedMode(std::string_view text);

// Trims ASCII whitespace at both ends.
std::string Trim(std::string_view s);

}  // namespace ember::bench
