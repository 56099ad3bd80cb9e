// Runs a child process (argv, no shell) and captures its stdout and stderr, with a wall-clock limit.
// Used for the benchmark stacks (each measurement a fresh process), git metadata and test renderers.
// Thread-compatible: concurrent calls are fine, each owns its pipes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::bench {

struct ProcessResult {
  int exit_code = -1;         // -1 when killed by a signal
  int signal = 0;             // the terminating signal, 0 if it exited
  bool timed_out = false;     // killed (SIGKILL to its process group) after the limit
  std::string out, err;
  int64_t peak_rss_bytes = 0; // ru_maxrss of the child (and its waited-for descendants)
  double wall_s = 0;
};

// Fails only when the process cannot be started (fork/pipe failure, or exec failure reported as
// exit code 127 with a message in `err`). A non-zero exit is a result, not an error.
StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s);

}  // namespace ember::bench
