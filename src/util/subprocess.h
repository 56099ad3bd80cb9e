// ember's one way to start a child process: an argv vector handed to posix_spawn, never a shell string,
// so a user's path with spaces, quotes, `$(...)` or `;` reaches the child as one argument. Used for the
// benchmark stacks (each measurement a fresh process), the llama.cpp peer (node runner.mjs), `ember
// serve` children, git metadata and test renderers.
//
// The child runs in its own process group (a timeout or KillGroup ends helpers it spawned too), with
// default signal dispositions and an empty signal mask (a server that ignores SIGPIPE does not pass that
// on), stdin from /dev/null unless given bytes, and only the descriptors named here.
// Thread-compatible: concurrent calls are fine, each Process owns its pipes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace ember {

// Where one of the child's output streams goes.
enum class OutputMode {
  kCapture,       // into ProcessResult::out / err (drained while waiting, so a chatty child never blocks)
  kFile,          // to a file (created or truncated, mode 0600)
  kDiscard,       // to /dev/null
  kSameAsStdout,  // stderr only: wherever stdout goes (one log file with both, in order)
};

struct ProcessOptions {
  // argv[0] is the program: looked up in PATH when it has no '/'; a relative path with '/' is resolved
  // in working_dir.
  std::vector<std::string> argv;
  OutputMode stdout_mode = OutputMode::kCapture;
  std::string stdout_path;  // kFile
  OutputMode stderr_mode = OutputMode::kCapture;
  std::string stderr_path;  // kFile
  std::optional<std::string> stdin_data;  // written to the child's stdin, then closed; none: /dev/null
  // Set in the child on top of this process's environment (replacing a variable of the same name).
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;  // empty: this process's
};

// How a child ended, and what it printed (the captured streams).
struct ProcessResult {
  int exit_code = -1;       // -1 when it was killed by a signal
  int signal = 0;           // the terminating signal, 0 if it exited
  bool timed_out = false;   // killed (SIGKILL to its process group) at the time limit
  std::string out, err;     // captured stdout / stderr (empty unless kCapture)
  int64_t peak_rss_bytes = 0;  // ru_maxrss of the child (and its waited-for descendants)
  double wall_s = 0;        // start -> reaped

  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  // Ok when the child exited 0; otherwise an error naming `what` (e.g. "llama.cpp peer"), how it ended
  // (exit code, signal or time limit) and the tail of its stderr.
  Status ToStatus(const std::string& what) const;
};

// A started child. Destroying it before it was reaped SIGKILLs its process group and reaps it.
class Process {
 public:
  // Fails (naming argv[0]) when the program cannot be run: not found, not executable, a bad working
  // directory, an output file that cannot be created. A started child's exit code is a result, not an error.
  static StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // Feeds stdin and drains the captured streams until the child has exited and its pipes are closed, or
  // until timeout_s (> 0, counted from this call) has passed: then its process group gets SIGKILL and timed_out is set. <= 0:
  // no limit. Call once.
  ProcessResult Wait(double timeout_s);
  // Reaps the child without blocking if it has exited (captured output is not read: use Wait for that).
  bool HasExited();
  // Sends sig to the child alone (SIGTERM: let a server drain); a no-op once it has been reaped.
  void Signal(int sig);
  // SIGKILL to the child's whole process group (it and whatever it started).
  void KillGroup();

 private:
  Process() = default;
  bool Reap(bool block);  // wait4; records the status; whether the child is reaped
  void CloseFds();

  pid_t pid_ = -1;
  int pidfd_ = -1;  // readable once the child exits (pidfd_open); -1: poll with a short period instead
  int stdin_fd_ = -1, out_fd_ = -1, err_fd_ = -1;  // our ends of the pipes, -1 when not piped
  std::string stdin_data_;
  size_t stdin_written_ = 0;
  bool reaped_ = false, status_known_ = false;
  int wait_status_ = 0;
  int64_t maxrss_kb_ = 0;
  int64_t start_us_ = 0;
};

// Start + Wait(timeout_s): the common case of running a command to completion.
StatusOr<ProcessResult> RunProcess(const ProcessOptions& options, double timeout_s);
// The same with stdout and stderr captured, stdin from /dev/null.
StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s);

}  // namespace ember
