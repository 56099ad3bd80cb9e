// Preflight (docs/bench-spec.md §1): judges whether the machine is fit to benchmark on, from two samples
// taken a short window apart. Every lesson behind a check was measured: leftover swap turned 32 tok/s
// into 0.02; a background indexer at 87% CPU with a tiny RSS passed every memory check; a cold page
// cache dominated the prefill timer. A clean preflight is still only a coarse pre-gate: the run spread
// (stability.h) is the direct quality signal.
//
// EvaluatePreflight is pure (tests feed recorded fixtures); RunPreflight samples the live machine.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "bench/machine_probe.h"
#include "util/status.h"

namespace ember::bench {

struct PreflightLimits {
  double max_swap_mb = 512;        // swap in use above this is a problem (any swap *activity* always is)
  double min_available_pct = 35;   // MemAvailable / MemTotal
  // 1-minute load / cores. Above 1.0 so that the residue of our own previous leg (which decays into
  // the 1-minute average) does not fail the preflight between legs; hot foreign processes are caught
  // by the per-process CPU check instead.
  double max_load_ratio = 1.0;
  // /proc/pressure "some" avg10, in %. Loose enough that the 10-s tail of our own previous leg (its
  // threads briefly queueing behind kernel work) does not fail the check between legs.
  double max_pressure = 20;
  double cpu_pct = 50;             // a foreign process at or above this CPU share is a problem
  double big_rss_mb = 2048;        // a foreign process at or above this RSS is a problem, allowed or not
  std::vector<std::string> allow_cmds;  // exact command lines tolerated for CPU use
};

enum class CheckState { kOk, kProblem, kInfo, kUnavailable };
const char* CheckStateName(CheckState s);

struct Check {
  std::string name;
  CheckState state = CheckState::kOk;
  std::string detail;
};

struct ForeignProcess {
  int pid = 0;
  std::string command;
  double cpu_pct = 0;
  double rss_mb = 0;
  bool allowed = false;  // on the allow-list and under the RSS limit: recorded, not a problem
};

struct PreflightInputs {
  MachineSample before;
  MachineSample after;
  MachineInfo info;
  double window_s = 1.0;
  int own_pid = 0;         // this process: it and its descendants are never foreign
  long ticks_per_s = 100;  // sysconf(_SC_CLK_TCK)
  long page_size = 4096;
  std::string model_path;                      // empty: no page-cache check
  std::optional<double> model_resident_frac;   // nullopt with a model path: could not be measured
  std::string at;                              // ISO-8601 UTC time of the sample
};

struct PreflightReport {
  bool ok = true;
  std::vector<Check> checks;
  std::vector<std::string> problems;
  std::vector<ForeignProcess> foreign;
  MachineInfo info;
  double window_s = 0;
  std::string at;
  // Key figures, also stored in every eval-DB row's machine_state JSON.
  std::optional<double> swap_used_mb, available_pct, load_ratio, model_resident_frac;
  std::optional<double> memory_pressure, cpu_pressure;
  std::optional<uint64_t> swap_pages_moved, throttle_events_delta;
};

PreflightReport EvaluatePreflight(const PreflightInputs& in, const PreflightLimits& limits);

// Foreign high-CPU / high-RSS processes between two samples, own process tree excluded.
std::vector<ForeignProcess> FindForeignProcesses(const PreflightInputs& in, const PreflightLimits& limits);

nlohmann::json PreflightToJson(const PreflightReport& r);
// A human checklist, one line per check, then the recorded machine identity.
std::string PreflightToText(const PreflightReport& r);

struct PreflightOptions {
  std::string root = "/";
  double window_s = 1.0;
  std::string model_path;
};
// Samples the live machine twice, `window_s` apart, and evaluates. Fails only on a bad model path.
StatusOr<PreflightReport> RunPreflight(const PreflightLimits& limits, const PreflightOptions& opts);

// Fraction of `path`'s pages resident in the page cache (mincore over a read-only mapping).
StatusOr<double> PageCacheResidentFraction(const std::string& path);

// A wall time (microseconds since the epoch) as "YYYY-MM-DDTHH:MM:SSZ".
std::string UtcIso(int64_t wall_micros);
// Env::Default()'s wall time, as UtcIso.
std::string UtcNowIso();

}  // namespace ember::bench
