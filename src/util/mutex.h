// The mutex, scoped lock and condition variable ember's own code uses instead of the std:: ones, so
// that clang's thread-safety analysis can check the GUARDED_BY / REQUIRES annotations
// (util/thread_annotations.h; libstdc++'s std::mutex carries none). Same semantics as std::mutex and
// std::condition_variable; timed waits go through Env::WaitUntil so tests can drive them with a
// simulated clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "util/thread_annotations.h"

namespace ember {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex (where it cannot see it); checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds mu from construction to destruction.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// As MutexLock, but Release() may unlock early (a branch that must not hold the lock any longer, e.g.
// before slow work or a callback); the destructor then does nothing.
class SCOPED_CAPABILITY ReleasableMutexLock {
 public:
  explicit ReleasableMutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~ReleasableMutexLock() RELEASE() {
    if (mu_ != nullptr) mu_->Unlock();
  }
  void Release() RELEASE() {
    mu_->Unlock();
    mu_ = nullptr;
  }
  ReleasableMutexLock(const ReleasableMutexLock&) = delete;
  ReleasableMutexLock& operator=(const ReleasableMutexLock&) = delete;

 private:
  Mutex* mu_;
};

// No predicate overloads: a lambda predicate is analysed apart from the lock its caller holds, so
// waits are written as `while (!cond) cv.Wait(&mu);`, which the analysis checks.
class CondVar {
 public:
  // Atomically releases mu and waits for a Signal (or a spurious wake-up); mu is held again on return.
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, but returns at the latest at `deadline` on the steady clock; true when the deadline passed.
  // Product code calls Env::WaitUntil instead (PosixEnv forwards here), which tests can simulate.
  bool WaitUntilSteady(Mutex* mu, std::chrono::steady_clock::time_point deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out = cv_.wait_until(lock, deadline) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ember
