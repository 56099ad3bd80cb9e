#include "bench/preflight.h"

#include <cstdio>
#include <map>
#include <set>

namespace ember::bench {
namespace {

std::string Fmt(const char* fmt, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

struct Builder {
  PreflightReport& r;
  void Add(std::string name, CheckState state, std::string detail) {
    if (state == CheckState::kProblem) {
      r.ok = false;
      r.problems.push_back(name + ": " + detail);
    }
    r.checks.push_back({std::move(name), state, std::move(detail)});
  }
};

void CheckMemory(const PreflightInputs& in, const PreflightLimits& lim, PreflightReport& r, Builder& b) {
  if (!in.after.mem) {
    b.Add("swap", CheckState::kUnavailable, "/proc/meminfo unreadable");
    b.Add("available memory", CheckState::kUnavailable, "/proc/meminfo unreadable");
    return;
  }
  const MemInfo& m = *in.after.mem;
  r.swap_used_mb = static_cast<double>(m.swap_used_kb()) / 1024.0;
  b.Add("swap", *r.swap_used_mb > lim.max_swap_mb ? CheckState::kProblem : CheckState::kOk,
        Fmt("%.0f MB in use (limit %.0f MB)", *r.swap_used_mb, lim.max_swap_mb));
  r.available_pct = 100.0 * static_cast<double>(m.available_kb) / static_cast<double>(m.total_kb);
  b.Add("available memory", *r.available_pct < lim.min_available_pct ? CheckState::kProblem : CheckState::kOk,
        Fmt("%.1f%% available (minimum %.0f%%)", *r.available_pct, lim.min_available_pct));
}

void CheckSwapActivity(const PreflightInputs& in, PreflightReport& r, Builder& b) {
  if (!in.before.swap || !in.after.swap) {
    b.Add("swap activity", CheckState::kUnavailable, "/proc/vmstat has no pswpin/pswpout");
    return;
  }
  const auto& s0 = *in.before.swap;
  const auto& s1 = *in.after.swap;
  // Counters only grow; a smaller second read means a different source (or a reboot): treat as 0.
  uint64_t in_pages = s1.pswpin >= s0.pswpin ? s1.pswpin - s0.pswpin : 0;
  uint64_t out_pages = s1.pswpout >= s0.pswpout ? s1.pswpout - s0.pswpout : 0;
  r.swap_pages_moved = in_pages + out_pages;
  b.Add("swap activity", *r.swap_pages_moved > 0 ? CheckState::kProblem : CheckState::kOk,
        Fmt("%.0f pages in, %.0f pages out", static_cast<double>(in_pages), static_cast<double>(out_pages)) +
            Fmt(" over %.1f s", in.window_s));
}

void CheckPressure(const char* name, const std::optional<Pressure>& p, double limit, std::optional<double>& out,
                   Builder& b) {
  if (!p) {
    b.Add(name, CheckState::kUnavailable, "no /proc/pressure (kernel without PSI)");
    return;
  }
  out = p->some_avg10;
  b.Add(name, p->some_avg10 > limit ? CheckState::kProblem : CheckState::kOk,
        Fmt("some avg10 %.2f%% (limit %.0f%%)", p->some_avg10, limit));
}

void CheckLoad(const PreflightInputs& in, const PreflightLimits& lim, PreflightReport& r, Builder& b) {
  if (!in.after.load1 || in.info.cores <= 0) {
    b.Add("load", CheckState::kUnavailable, "no /proc/loadavg or core count");
    return;
  }
  r.load_ratio = *in.after.load1 / in.info.cores;
  b.Add("load", *r.load_ratio > lim.max_load_ratio ? CheckState::kProblem : CheckState::kOk,
        Fmt("1-min load %.2f", *in.after.load1) + Fmt(" on %.0f cores = %.2f per core", in.info.cores, *r.load_ratio) +
            Fmt(" (limit %.2f)", lim.max_load_ratio));
}

void CheckThrottle(const PreflightInputs& in, PreflightReport& r, Builder& b) {
  if (!in.before.throttle_events || !in.after.throttle_events) {
    b.Add("thermal throttle", CheckState::kUnavailable, "no thermal_throttle counters");
    return;
  }
  uint64_t d = *in.after.throttle_events >= *in.before.throttle_events
                   ? *in.after.throttle_events - *in.before.throttle_events : 0;
  r.throttle_events_delta = d;
  b.Add("thermal throttle", d > 0 ? CheckState::kProblem : CheckState::kOk,
        Fmt("%.0f throttle events during the window, %.0f since boot", static_cast<double>(d),
            static_cast<double>(*in.after.throttle_events)));
}

void CheckProcesses(const PreflightInputs& in, const PreflightLimits& lim, PreflightReport& r, Builder& b) {
  r.foreign = FindForeignProcesses(in, lim);
  int bad = 0;
  for (const auto& p : r.foreign) {
    if (p.allowed) {
      b.Add("allowed process", CheckState::kInfo,
            "pid " + std::to_string(p.pid) + Fmt(" %.0f%% cpu, %.0f MB rss: ", p.cpu_pct, p.rss_mb) + p.command);
      continue;
    }
    ++bad;
    b.Add("foreign process", CheckState::kProblem,
          "pid " + std::to_string(p.pid) + Fmt(" %.0f%% cpu, %.0f MB rss: ", p.cpu_pct, p.rss_mb) + p.command);
  }
  if (bad == 0)
    b.Add("foreign processes", CheckState::kOk,
          Fmt("none at or above %.0f%% cpu or %.0f MB rss", lim.cpu_pct, lim.big_rss_mb) +
              (r.foreign.empty() ? "" : " (" + std::to_string(r.foreign.size()) + " allowed)"));
}

void RecordInfo(const PreflightInputs& in, PreflightReport& r, Builder& b) {
  const MachineInfo& i = in.info;
  b.Add("governor", CheckState::kInfo, i.governor.empty() ? "no cpufreq" : i.governor);
  b.Add("boost", CheckState::kInfo, i.boost.empty() ? "not exposed" : i.boost);
  b.Add("transparent huge pages", CheckState::kInfo, i.thp.empty() ? "not exposed" : i.thp);
  if (in.model_path.empty()) return;
  r.model_resident_frac = in.model_resident_frac;
  // Recorded, not judged: the discarded warm-up round pages the model in; a cold cache here explains
  // a slow first round, it does not invalidate the measured ones.
  b.Add("model page cache", in.model_resident_frac ? CheckState::kInfo : CheckState::kUnavailable,
        in.model_resident_frac ? Fmt("%.1f%% of the model resident", 100.0 * *in.model_resident_frac)
                               : std::string("could not map ") + in.model_path);
}

}  // namespace

const char* CheckStateName(CheckState s) {
  switch (s) {
    case CheckState::kOk: return "ok";
    case CheckState::kProblem: return "problem";
    case CheckState::kInfo: return "info";
    case CheckState::kUnavailable: return "unavailable";
  }
  return "unknown";
}

std::vector<ForeignProcess> FindForeignProcesses(const PreflightInputs& in, const PreflightLimits& lim) {
  // Own tree: this process and every descendant (runners h2h spawned), by ppid links in the last sample.
  std::multimap<int, int> children;
  for (const auto& p : in.after.processes) children.emplace(p.stat.ppid, p.stat.pid);
  std::set<int> own;
  std::vector<int> stack{in.own_pid};
  while (!stack.empty() && in.own_pid > 0) {
    int pid = stack.back();
    stack.pop_back();
    if (!own.insert(pid).second) continue;
    auto [lo, hi] = children.equal_range(pid);
    for (auto it = lo; it != hi; ++it) stack.push_back(it->second);
  }
  std::map<int, const ProcessSample*> before;
  for (const auto& p : in.before.processes) before[p.stat.pid] = &p;
  std::vector<ForeignProcess> out;
  for (const auto& p : in.after.processes) {
    if (own.count(p.stat.pid)) continue;
    ForeignProcess f;
    f.pid = p.stat.pid;
    f.command = p.cmdline.empty() ? "[" + p.stat.comm + "]" : p.cmdline;
    f.rss_mb = static_cast<double>(p.stat.rss_pages) * static_cast<double>(in.page_size) / (1024.0 * 1024.0);
    auto it = before.find(p.stat.pid);
    // Same pid and start time: the same process, so the tick delta is its CPU use over the window.
    if (it != before.end() && it->second->stat.start_ticks == p.stat.start_ticks && in.window_s > 0 &&
        p.stat.cpu_ticks >= it->second->stat.cpu_ticks)
      f.cpu_pct = 100.0 * static_cast<double>(p.stat.cpu_ticks - it->second->stat.cpu_ticks) /
                  static_cast<double>(in.ticks_per_s) / in.window_s;
    const bool big = f.rss_mb >= lim.big_rss_mb;
    if (!big && f.cpu_pct < lim.cpu_pct) continue;
    // Permission to use CPU never extends to eating the benchmark's memory headroom.
    bool listed = false;
    for (const auto& a : lim.allow_cmds) listed |= a == p.cmdline;
    f.allowed = listed && !big;
    out.push_back(std::move(f));
  }
  return out;
}

PreflightReport EvaluatePreflight(const PreflightInputs& in, const PreflightLimits& limits) {
  PreflightReport r;
  r.info = in.info;
  r.window_s = in.window_s;
  r.at = in.at;
  Builder b{r};
  CheckMemory(in, limits, r, b);
  CheckSwapActivity(in, r, b);
  CheckPressure("memory pressure", in.after.memory_pressure, limits.max_pressure, r.memory_pressure, b);
  CheckPressure("cpu pressure", in.after.cpu_pressure, limits.max_pressure, r.cpu_pressure, b);
  CheckLoad(in, limits, r, b);
  CheckThrottle(in, r, b);
  CheckProcesses(in, limits, r, b);
  RecordInfo(in, r, b);
  return r;
}

}  // namespace ember::bench
