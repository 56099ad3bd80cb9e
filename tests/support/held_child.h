// A forked child that does one thing (e.g. takes a lock), reports a character, then waits to be killed.
// It never outlives its test: the destructor SIGKILLs and reaps it (a failed ASSERT in the parent returns
// early), and PR_SET_PDEATHSIG kills it if the test binary itself dies.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace ember::testing {

class HeldChild {
 public:
  explicit HeldChild(const std::function<char()>& body) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const char c = body();
      (void)!::write(fds[1], &c, 1);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    if (pid_ > 0 && ::read(fds[0], &report_, 1) != 1) report_ = 0;
    ::close(fds[0]);
  }
  ~HeldChild() { Kill(); }
  HeldChild(const HeldChild&) = delete;
  HeldChild& operator=(const HeldChild&) = delete;

  pid_t pid() const { return pid_; }
  // What body() returned (0 if the child could not be started or died first).
  char report() const { return report_; }
  // SIGKILL and reap; true if there was a child to kill.
  bool Kill() {
    if (pid_ <= 0) return false;
    const bool ok = ::kill(pid_, SIGKILL) == 0 && ::waitpid(pid_, nullptr, 0) == pid_;
    pid_ = -1;
    return ok;
  }

 private:
  pid_t pid_ = -1;
  char report_ = 0;
};

}  // namespace ember::testing
