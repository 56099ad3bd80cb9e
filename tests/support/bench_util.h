// Helpers for the hand-built benchmarks (tests/*/bench/*.cc): the calling thread's CPU time, which a
// shared machine's preemption does not inflate, and the median of a series.
#pragma once

#include <time.h>

#include <algorithm>
#include <vector>

namespace ember::testing {

inline double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace ember::testing
