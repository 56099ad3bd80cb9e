#include "support/sim_env.h"

#include <algorithm>
#include <thread>

#include "util/check.h"

namespace ember::testing {

SimEnv::SimEnv(Env* target) : EnvWrapper(target) {}

int64_t SimEnv::WallMicros() {
  std::lock_guard<std::mutex> lock(sim_mu_);
  return wall_;
}

void SimEnv::SetWallMicros(int64_t us) {
  std::lock_guard<std::mutex> lock(sim_mu_);
  wall_ = us;
}

int64_t SimEnv::MonotonicMicros() {
  std::lock_guard<std::mutex> lock(sim_mu_);
  return monotonic_;
}

void SimEnv::SleepForMicros(int64_t micros) {
  if (micros <= 0) return;
  {
    std::lock_guard<std::mutex> lock(sim_mu_);
    slept_ += micros;
  }
  Advance(micros);
}

int64_t SimEnv::slept_micros() {
  std::lock_guard<std::mutex> lock(sim_mu_);
  return slept_;
}

void SimEnv::Advance(int64_t us) {
  EMBER_CHECK_MSG(us >= 0, "simulated time only moves forward");
  {
    std::lock_guard<std::mutex> lock(sim_mu_);
    monotonic_ += us;
    wall_ += us;
  }
  WakeDue();
}

void SimEnv::WakeDue() {
  std::unique_lock<std::mutex> lock(sim_mu_);
  for (;;) {
    bool busy = false;
    for (Waiter* w : waiters_) {
      if (w->woken || w->deadline > monotonic_) continue;
      // Holding w->mu means the waiter is inside CondVar::Wait (or not waiting: then it reads the time
      // itself on its way back in). Held by someone else: let go of sim_mu_ so it can finish, retry.
      if (w->mu->TryLock()) {
        w->cv->SignalAll();
        w->woken = true;
        w->mu->Unlock();
      } else {
        busy = true;
      }
    }
    waiters_cv_.notify_all();
    if (!busy) return;
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
}

bool SimEnv::WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) {
  Waiter w{cv, mu, deadline_micros, false};
  {
    std::lock_guard<std::mutex> lock(sim_mu_);
    if (monotonic_ >= deadline_micros) return true;
    waiters_.push_back(&w);
  }
  waiters_cv_.notify_all();
  cv->Wait(mu);  // mu stays held from registration to here, so an Advance cannot signal before this
  std::lock_guard<std::mutex> lock(sim_mu_);
  waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &w));
  waiters_cv_.notify_all();
  return monotonic_ >= deadline_micros;
}

size_t SimEnv::waiters() {
  std::lock_guard<std::mutex> lock(sim_mu_);
  return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(), [](const Waiter* w) { return !w->woken; }));
}

bool SimEnv::AwaitWaiters(size_t n) {
  std::unique_lock<std::mutex> lock(sim_mu_);
  return waiters_cv_.wait_for(lock, std::chrono::minutes(1), [&] {
    return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(), [](const Waiter* w) { return !w->woken; })) >= n;
  });
}

}  // namespace ember::testing
