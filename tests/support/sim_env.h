// A simulated clock for tests (docs/conventions.md "Time"): an EnvWrapper whose clocks stand still
// until the test moves them, so debounces, max-defer timers, idleness and deadlines are tested without
// sleeping and without depending on how fast the machine is. File operations go to the wrapped Env
// (the real one, or an in-memory / fault-injection Env).
//
//   Advance(us)       moves both clocks forward and wakes every WaitUntil whose deadline has come.
//   SleepForMicros    advances the clock itself by the requested time and returns at once: a sleep is
//                     "time passes", and code that sleeps in a loop can never hang a test. (Blocking
//                     until another thread advances would make every sleeping helper need a driver.)
//   WaitUntil         returns only on a Signal of the product's CondVar, a spurious wake-up, or once
//                     simulated time reaches the deadline (Advance wakes it); never because real time
//                     passed. Race-free without any real-time poll: a waiter registers (cv, mu) under the
//                     sim lock while holding mu, reads the simulated time and waits; Advance signals each
//                     due waiter while holding that waiter's mu (taken by TryLock, retried after
//                     dropping the sim lock so that a waiter still on its way into Wait, or on its way out
//                     through the sim lock, gets through). So a waiter is either already inside
//                     CondVar::Wait when signalled, or reads the new time itself.
//   AwaitWaiters(n)   blocks (in real time) until n threads are inside WaitUntil: the sync point a test
//                     uses before Advance, so a background thread has computed its deadline from the
//                     time before the Advance rather than after it.
//
// Advance must not be called while holding a mutex some WaitUntil caller waits with (it would spin).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "util/env_wrapper.h"

namespace ember::testing {

class SimEnv : public EnvWrapper {
 public:
  // Monotonic time starts at 1000 s (an arbitrary non-zero origin, so "0" is never mistaken for a
  // reading), wall time at 2026-01-01T00:00:00Z.
  static constexpr int64_t kStartMonotonicMicros = 1'000'000'000;
  static constexpr int64_t kStartWallMicros = 1'767'225'600'000'000;

  explicit SimEnv(Env* target = Env::Default());

  // Moves both clocks forward by us (>= 0) and wakes the waiters that are due.
  void Advance(int64_t us);
  void AdvanceSeconds(double s) { Advance(static_cast<int64_t>(s * 1e6)); }
  // Sets the wall clock alone (a real one can be set, even backwards); monotonic time is unaffected.
  void SetWallMicros(int64_t us);
  // Blocks until at least n threads are inside WaitUntil and not yet woken by an Advance. False after a
  // minute of real time (a hung test fails instead of hanging; no test relies on that duration).
  [[nodiscard]] bool AwaitWaiters(size_t n);
  size_t waiters();
  // Total simulated time spent in SleepForMicros (tests assert a sleep was asked for).
  int64_t slept_micros();

  int64_t WallMicros() override;
  int64_t MonotonicMicros() override;
  void SleepForMicros(int64_t micros) override;
  bool WaitUntil(CondVar* cv, Mutex* mu, int64_t deadline_micros) REQUIRES(mu) override;

 private:
  struct Waiter {
    CondVar* cv;
    Mutex* mu;
    int64_t deadline;
    bool woken;  // Advance signalled it (it is on its way out)
  };
  void WakeDue();

  // A std::mutex, not ember::Mutex: it is taken while product code holds its own Mutex (lock order
  // product mu -> sim_mu_, never the reverse except by TryLock), which the analysis cannot express.
  std::mutex sim_mu_;
  std::condition_variable waiters_cv_;  // AwaitWaiters: the number of waiters changed
  int64_t monotonic_ = kStartMonotonicMicros;
  int64_t wall_ = kStartWallMicros;
  int64_t slept_ = 0;
  std::vector<Waiter*> waiters_;
};

}  // namespace ember::testing
