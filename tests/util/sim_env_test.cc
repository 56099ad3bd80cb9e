// The simulated clock (tests/support/sim_env.h): clocks move only by Advance/SleepForMicros, and
// WaitUntil returns once simulated time reaches the deadline — never earlier, never lost.
#include "support/sim_env.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace ember::testing {
namespace {

TEST(SimEnv, ClocksStandStillUntilAdvanced) {
  SimEnv env;
  const int64_t m0 = env.MonotonicMicros(), w0 = env.WallMicros();
  EXPECT_EQ(m0, SimEnv::kStartMonotonicMicros);
  EXPECT_EQ(w0, SimEnv::kStartWallMicros);
  EXPECT_EQ(env.MonotonicMicros(), m0);
  env.Advance(1500);
  EXPECT_EQ(env.MonotonicMicros(), m0 + 1500);
  EXPECT_EQ(env.WallMicros(), w0 + 1500);
  env.AdvanceSeconds(2.5);
  EXPECT_EQ(env.MonotonicMicros(), m0 + 1500 + 2'500'000);
}

TEST(SimEnv, SleepAdvancesTheClockAndReturnsAtOnce) {
  SimEnv env;
  const int64_t m0 = env.MonotonicMicros();
  env.SleepForMicros(3'600'000'000);  // an hour, instantly
  EXPECT_EQ(env.MonotonicMicros(), m0 + 3'600'000'000);
  EXPECT_EQ(env.slept_micros(), 3'600'000'000);
  env.SleepForMicros(-5);  // nothing
  EXPECT_EQ(env.slept_micros(), 3'600'000'000);
}

TEST(SimEnv, FileOperationsGoToTheWrappedEnv) {
  SimEnv env;
  EXPECT_TRUE(env.DirExists("/"));
  EXPECT_EQ(env.target(), Env::Default());
}

TEST(SimEnv, WaitUntilAPassedDeadlineReturnsAtOnce) {
  SimEnv env;
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(env.WaitUntil(&cv, &mu, env.MonotonicMicros()));
  EXPECT_TRUE(env.WaitUntil(&cv, &mu, 0));
}

TEST(SimEnv, WaitUntilReturnsOnlyOnceSimulatedTimeReachesTheDeadline) {
  SimEnv env;
  Mutex mu;
  CondVar cv;
  std::atomic<bool> returned{false};
  const int64_t deadline = env.MonotonicMicros() + 100;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (!env.WaitUntil(&cv, &mu, deadline)) {
    }
    returned = true;
  });
  ASSERT_TRUE(env.AwaitWaiters(1));
  env.Advance(99);  // not due: the waiter is not woken and still waits
  EXPECT_EQ(env.waiters(), 1u);
  EXPECT_FALSE(returned.load());
  env.Advance(1);
  waiter.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(env.waiters(), 0u);
}

TEST(SimEnv, ASignalEndsTheWaitBeforeTheDeadline) {
  SimEnv env;
  Mutex mu;
  CondVar cv;
  bool flag = false;
  bool timed_out = true;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (!flag) timed_out = env.WaitUntil(&cv, &mu, env.MonotonicMicros() + 1'000'000);
  });
  ASSERT_TRUE(env.AwaitWaiters(1));
  {
    MutexLock lock(&mu);
    flag = true;
  }
  cv.Signal();
  waiter.join();
  EXPECT_FALSE(timed_out);  // woken by the signal, simulated time did not move
}

// No lost wake-up: Advance races the waiter's way into Wait (no AwaitWaiters), thousands of times. A
// lost signal would hang here (the test's timeout catches it).
TEST(SimEnv, AdvanceRacingAWaiterNeverLosesTheWakeUp) {
  for (int i = 0; i < 2000; ++i) {
    SimEnv env;
    Mutex mu;
    CondVar cv;
    const int64_t deadline = env.MonotonicMicros() + 10;
    std::thread waiter([&] {
      MutexLock lock(&mu);
      while (!env.WaitUntil(&cv, &mu, deadline)) {
      }
    });
    if (i % 2) std::this_thread::yield();
    env.Advance(10);
    waiter.join();
  }
}

TEST(SimEnv, AdvanceWakesEveryDueWaiterAndOnlyThose) {
  SimEnv env;
  Mutex mu;
  CondVar cv;
  std::atomic<int> done{0};
  const int64_t t0 = env.MonotonicMicros();
  std::vector<std::thread> ts;
  for (int k = 1; k <= 3; ++k) {
    ts.emplace_back([&, k] {
      MutexLock lock(&mu);
      while (!env.WaitUntil(&cv, &mu, t0 + k * 10)) {
      }
      ++done;
    });
  }
  ASSERT_TRUE(env.AwaitWaiters(3));
  env.Advance(20);  // the 10 and 20 waiters are due
  ASSERT_TRUE(env.AwaitWaiters(1));
  for (int spin = 0; done.load() < 2 && spin < 1'000'000; ++spin) std::this_thread::yield();
  EXPECT_EQ(done.load(), 2);
  env.Advance(10);
  for (auto& t : ts) t.join();
  EXPECT_EQ(done.load(), 3);
}

}  // namespace
}  // namespace ember::testing
