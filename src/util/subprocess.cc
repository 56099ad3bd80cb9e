#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/env.h"

extern char** environ;

namespace ember {
namespace {

// Closes what it holds unless released: the many early returns of Start stay leak-free.
class FdGuard {
 public:
  FdGuard() = default;
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// posix_spawn's attribute and file-action objects, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

// This process's environment with `extra` set on top (same name: extra wins).
std::vector<std::string> ChildEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The parent's end of a capture pipe in `ours`; the child's end is dup'ed onto `target`.
Status PipeOutput(SpawnSetup& s, int target, FdGuard& ours, FdGuard& theirs, const std::string& what) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoStatus("pipe", what, errno);
  ours.reset(p[0]);
  theirs.reset(p[1]);
  posix_spawn_file_actions_adddup2(&s.actions, p[1], target);
  return Status::Ok();
}

}  // namespace

Status ProcessResult::ToStatus(const std::string& what) const {
  if (ok()) return Status::Ok();
  std::string how = timed_out ? "ran past its time limit and was killed"
                    : signal != 0 ? "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")"
                                  : "exited " + std::to_string(exit_code);
  const std::string tail = err.size() > 500 ? err.substr(err.size() - 500) : err;
  return (timed_out ? ResourceExhausted : Internal)(what + " " + how + (tail.empty() ? "" : ": " + tail));
}

StatusOr<std::unique_ptr<Process>> Process::Start(const ProcessOptions& o) {
  if (o.argv.empty()) return InvalidArgument("Process::Start: empty argv");
  const std::string& prog = o.argv[0];
  if (o.stdout_mode == OutputMode::kSameAsStdout) return InvalidArgument("Process::Start: stdout cannot follow itself");
  SpawnSetup s;
  // Own process group (so a timeout kills the whole tree: node spawns helpers); a clean signal state.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&s.attr, 0);
  posix_spawnattr_setsigdefault(&s.attr, &all);
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  // Child ends (closed here once the child holds them) and our ends.
  FdGuard in_child, out_child, err_child, file_out, file_err;
  std::unique_ptr<Process> p(new Process());
  FdGuard in_ours, out_ours, err_ours;
  if (o.stdin_data) {
    // A socket, not a pipe: send(MSG_NOSIGNAL) turns a child that stops reading into EPIPE, not a SIGPIPE
    // that would end this process.
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return ErrnoStatus("socketpair", prog, errno);
    in_ours.reset(sv[0]);
    in_child.reset(sv[1]);
    ::shutdown(sv[0], SHUT_RD);
    ::fcntl(sv[0], F_SETFL, O_NONBLOCK);
    posix_spawn_file_actions_adddup2(&s.actions, sv[1], STDIN_FILENO);
    p->stdin_data_ = *o.stdin_data;
  } else {
    posix_spawn_file_actions_addopen(&s.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  auto route = [&](OutputMode mode, const std::string& path, int target, FdGuard& ours, FdGuard& child,
                   FdGuard& file) -> Status {
    switch (mode) {
      case OutputMode::kCapture: return PipeOutput(s, target, ours, child, prog);
      case OutputMode::kFile: {
        // Opened here, not in the child, so a bad path is an error naming it rather than an exit code.
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return ErrnoStatus("open", path, errno);
        file.reset(fd);
        posix_spawn_file_actions_adddup2(&s.actions, fd, target);
        return Status::Ok();
      }
      case OutputMode::kDiscard:
        posix_spawn_file_actions_addopen(&s.actions, target, "/dev/null", O_WRONLY, 0);
        return Status::Ok();
      case OutputMode::kSameAsStdout:
        posix_spawn_file_actions_adddup2(&s.actions, STDOUT_FILENO, target);
        return Status::Ok();
    }
    return Internal("Process::Start: bad output mode");
  };
  EMBER_RETURN_IF_ERROR(route(o.stdout_mode, o.stdout_path, STDOUT_FILENO, out_ours, out_child, file_out));
  EMBER_RETURN_IF_ERROR(route(o.stderr_mode, o.stderr_path, STDERR_FILENO, err_ours, err_child, file_err));
  // After the redirections, so output paths are relative to this process's directory, not the child's.
  if (!o.working_dir.empty()) posix_spawn_file_actions_addchdir_np(&s.actions, o.working_dir.c_str());

  std::vector<std::string> argv = o.argv, envs = ChildEnvironment(o.env);
  std::vector<char*> c_argv = CStrings(argv), c_env = CStrings(envs);
  p->start_us_ = Env::Default()->MonotonicMicros();
  pid_t pid = -1;
  // glibc's posix_spawn reports a failed chdir or exec as its return value (it waits for the exec).
  const int rc = ::posix_spawnp(&pid, prog.c_str(), &s.actions, &s.attr, c_argv.data(), c_env.data());
  if (rc != 0) {
    const std::string where = o.working_dir.empty() ? prog : prog + " (in " + o.working_dir + ")";
    return ErrnoStatus("spawn", where, rc);
  }
  p->pid_ = pid;
  // The raw syscall: glibc 2.36's <sys/pidfd.h> lacks extern "C". -1 on old kernels: Wait polls every 10 ms.
  p->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  p->stdin_fd_ = in_ours.release();
  p->out_fd_ = out_ours.release();
  p->err_fd_ = err_ours.release();
  return p;
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    KillGroup();
    Reap(/*block=*/true);
  }
  CloseFds();
}

void Process::CloseFds() {
  for (int* fd : {&stdin_fd_, &out_fd_, &err_fd_, &pidfd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

bool Process::Reap(bool block) {
  if (reaped_) return true;
  rusage ru{};
  int status = 0;
  for (;;) {
    const pid_t r = ::wait4(pid_, &status, block ? 0 : WNOHANG, &ru);
    if (r == pid_) break;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {  // ECHILD: someone else reaped it (a SIGCHLD handler); how it ended is unknown
      reaped_ = true;
      return true;
    }
    return false;  // WNOHANG, still running
  }
  reaped_ = true;
  status_known_ = true;
  wait_status_ = status;
  maxrss_kb_ = ru.ru_maxrss;
  return true;
}

bool Process::HasExited() { return Reap(/*block=*/false); }

void Process::Signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

void Process::KillGroup() {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);  // never kill(-(-1)): that would be every process we may signal
}

ProcessResult Process::Wait(double timeout_s) {
  ProcessResult r;
  Env* env = Env::Default();
  const int64_t deadline = timeout_s > 0 ? env->MonotonicMicros() + static_cast<int64_t>(timeout_s * 1e6) : INT64_MAX;
  char buf[65536];
  for (;;) {
    Reap(/*block=*/false);
    if (stdin_fd_ >= 0 && stdin_written_ == stdin_data_.size()) {
      ::close(stdin_fd_);  // all sent: the child sees end of input
      stdin_fd_ = -1;
    }
    if (reaped_ && out_fd_ < 0 && err_fd_ < 0) break;
    const int64_t now = env->MonotonicMicros();
    if (now >= deadline) {
      r.timed_out = true;
      KillGroup();
      break;
    }
    pollfd fds[4];
    int n = 0;
    if (stdin_fd_ >= 0) fds[n++] = {stdin_fd_, POLLOUT, 0};
    if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
    if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
    if (!reaped_ && pidfd_ >= 0) fds[n++] = {pidfd_, POLLIN, 0};
    // Without a pidfd, a child whose pipes are closed (or never opened) is checked every 10 ms.
    const int64_t cap_ms = (!reaped_ && pidfd_ < 0) ? 10 : 1000;
    const int wait_ms = static_cast<int>(std::clamp<int64_t>((deadline - now + 999) / 1000, 0, cap_ms));
    if (::poll(fds, static_cast<nfds_t>(n), wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      if (fd == stdin_fd_) {
        const ssize_t w = ::send(fd, stdin_data_.data() + stdin_written_, stdin_data_.size() - stdin_written_,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) stdin_written_ += static_cast<size_t>(w);
        else if (w < 0 && errno != EAGAIN && errno != EINTR) stdin_written_ = stdin_data_.size();  // it stopped reading
      } else if (fd == out_fd_ || fd == err_fd_) {
        const ssize_t got = ::read(fd, buf, sizeof(buf));
        if (got > 0) {
          (fd == out_fd_ ? r.out : r.err).append(buf, static_cast<size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          ::close(fd);
          (fd == out_fd_ ? out_fd_ : err_fd_) = -1;
        }
      }
    }
  }
  Reap(/*block=*/true);
  CloseFds();
  r.wall_s = static_cast<double>(env->MonotonicMicros() - start_us_) / 1e6;
  r.peak_rss_bytes = maxrss_kb_ * 1024;
  if (status_known_ && WIFEXITED(wait_status_)) r.exit_code = WEXITSTATUS(wait_status_);
  if (status_known_ && WIFSIGNALED(wait_status_)) r.signal = WTERMSIG(wait_status_);
  return r;
}

StatusOr<ProcessResult> RunProcess(const ProcessOptions& options, double timeout_s) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Process> p, Process::Start(options));
  return p->Wait(timeout_s);
}

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  ProcessOptions o;
  o.argv = argv;
  return RunProcess(o, timeout_s);
}

}  // namespace ember
