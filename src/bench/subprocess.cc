#include "bench/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/stopwatch.h"

namespace ember::bench {
namespace {

[[noreturn]] void ExecChild(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  // Own process group, so a timeout can kill the whole tree (node spawns helpers).
  ::setpgid(0, 0);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const char* msg = "exec failed: ";
  (void)!::write(STDERR_FILENO, msg, std::strlen(msg));
  (void)!::write(STDERR_FILENO, argv[0].c_str(), argv[0].size());
  ::_exit(127);
}

// Drains both pipes until they close or the deadline passes.
bool Pump(int out_fd, int err_fd, std::string& out, std::string& err, int64_t deadline_us) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const int64_t left_ms = (deadline_us - Env::Default()->MonotonicMicros()) / 1000;
    if (left_ms <= 0) return false;
    int rc = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (rc < 0 && errno != EINTR) return true;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  return true;
}

}  // namespace

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) return InvalidArgument("RunProcess: empty argv");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe", argv[0], errno);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]), ::close(out_pipe[1]);
    return ErrnoStatus("pipe", argv[0], errno);
  }
  const Stopwatch start;
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return ErrnoStatus("fork", argv[0], e);
  }
  if (pid == 0) ExecChild(argv, out_pipe[1], err_pipe[1]);
  ::setpgid(pid, pid);  // also from the parent: no race with an early kill
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessResult r;
  const int64_t deadline_us = start.start_micros() + static_cast<int64_t>(timeout_s * 1e6);
  if (!Pump(out_pipe[0], err_pipe[0], r.out, r.err, deadline_us)) {
    r.timed_out = true;
    ::kill(-pid, SIGKILL);
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.wall_s = start.ElapsedSeconds();
  r.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace ember::bench
