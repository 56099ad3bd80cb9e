// The serial background writer: order, the byte cap (oldest unstarted dropped), urgent jobs, WaitFor, Stop,
// and deferral while foreground (generation) work is active. Every time-driven case runs on a simulated
// clock (tests/support/sim_env.h): no test sleeps, and none depends on how fast the machine is.
#include "coldtier/write_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/poll.h"
#include "support/sim_env.h"

namespace ember {
namespace {

using ember::testing::SimEnv;
constexpr int64_t kMs = 1000;

// A job the worker blocks in until released, so tests control what is "started" and what is queued.
struct Gate {
  std::promise<void> entered, release;
  std::shared_future<void> released{release.get_future().share()};
  WriteJob Job() {
    WriteJob j;
    j.kind = "gate";
    j.run = [this] {
      entered.set_value();
      // Bounded: a test that fails before releasing must not hang the queue's Stop() for ever.
      if (released.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
        ADD_FAILURE() << "the gate job was never released";
      }
      return Status::Ok();
    };
    return j;
  }
};

WriteJob Recording(std::vector<int>* log, std::mutex* mu, int id, uint64_t bytes, std::vector<Status>* done = nullptr) {
  WriteJob j;
  j.kind = "spill";
  j.bytes = bytes;
  j.run = [=] {
    std::lock_guard<std::mutex> lock(*mu);
    log->push_back(id);
    return id < 0 ? IoError("disk said no") : Status::Ok();
  };
  if (done != nullptr) {
    j.done = [=](const Status& st) {
      std::lock_guard<std::mutex> lock(*mu);
      done->push_back(st);
    };
  }
  return j;
}

TEST(WriteQueueTest, RunsJobsInOrderAndWaitForCoversEveryEarlierJob) {
  WriteQueue q(1 << 20);
  std::vector<int> log;
  std::mutex mu;
  uint64_t t = 0;
  for (int i = 0; i < 20; ++i) t = q.Push(Recording(&log, &mu, i, 100));
  ASSERT_TRUE(q.WaitFor(t));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(log.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(log[i], i);
  EXPECT_EQ(q.stats().completed, 20u);
  EXPECT_EQ(q.stats().queued_bytes, 0u);
}

TEST(WriteQueueTest, OverTheCapTheOldestUnstartedJobIsDroppedAndTold) {
  WriteQueue q(250);
  Gate gate;
  q.Push(gate.Job());
  // The worker is busy: everything below stays queued.
  ASSERT_EQ(gate.entered.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the worker never ran the gate job";
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  q.Push(Recording(&log, &mu, 1, 100, &done));
  q.Push(Recording(&log, &mu, 2, 100, &done));
  EXPECT_EQ(q.stats().queued_bytes, 200u);
  const uint64_t t = q.Push(Recording(&log, &mu, 3, 100, &done));  // 300 > 250: job 1 goes
  EXPECT_EQ(q.stats().dropped, 1u);
  EXPECT_EQ(q.stats().queued_bytes, 200u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].code(), StatusCode::kResourceExhausted);
  }
  gate.release.set_value();
  ASSERT_TRUE(q.WaitFor(t));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{2, 3}));
}

TEST(WriteQueueTest, UrgentJobsJumpTheQueueAndAreNeverDropped) {
  WriteQueue q(100);
  Gate gate;
  q.Push(gate.Job());
  ASSERT_EQ(gate.entered.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the worker never ran the gate job";
  std::vector<int> log;
  std::mutex mu;
  q.Push(Recording(&log, &mu, 1, 100));
  WriteJob urgent = Recording(&log, &mu, 9, 1000);
  urgent.urgent = true;
  const uint64_t t = q.Push(std::move(urgent));
  EXPECT_EQ(q.stats().dropped, 0u);  // urgent bytes are not charged against the cap
  gate.release.set_value();
  ASSERT_TRUE(q.WaitFor(t));
  ASSERT_TRUE(q.WaitFor(q.last_ticket()));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{9, 1}));
}

TEST(WriteQueueTest, FailuresAreCountedAndReported) {
  WriteQueue q(1 << 20);
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  const uint64_t t = q.Push(Recording(&log, &mu, -1, 10, &done));
  ASSERT_TRUE(q.WaitFor(t));
  EXPECT_EQ(q.stats().failed, 1u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].code(), StatusCode::kIoError);
}

TEST(WriteQueueTest, WaitForTimesOutAtItsDeadlineWhileAJobRunsAndStopDropsTheRest) {
  SimEnv sim;
  auto q = std::make_unique<WriteQueue>(1 << 20, 5000 * kMs, &sim);
  Gate gate;
  q->Push(gate.Job());
  ASSERT_EQ(gate.entered.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the worker never ran the gate job";
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  const uint64_t t = q->Push(Recording(&log, &mu, 1, 10, &done));
  const int64_t deadline = sim.MonotonicMicros() + 20 * kMs;
  auto waited = std::async(std::launch::async, [&] { return q->WaitFor(t, deadline); });
  ASSERT_TRUE(sim.AwaitWaiters(1));  // the WaitFor (the worker is inside the gate job, not waiting)
  sim.Advance(19 * kMs);             // not yet: still waiting
  EXPECT_EQ(sim.waiters(), 1u);
  sim.Advance(1 * kMs);
  EXPECT_FALSE(waited.get());
  std::thread stopper([&] { q->Stop(); });
  // Stop drops the queued job at once (its done hears about it), then waits for the running one.
  const bool dropped = ember::testing::PollUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !done.empty();
  }, std::chrono::seconds(60), std::chrono::milliseconds(0));
  gate.release.set_value();
  stopper.join();
  ASSERT_TRUE(dropped) << "Stop did not drop the queued job within 60 s";
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(done[0].code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(q->WaitFor(t));
  // After Stop a push is dropped immediately.
  q->Push(Recording(&log, &mu, 2, 10, &done));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].code(), StatusCode::kFailedPrecondition);
}

TEST(WriteQueueTest, WaitForWithADeadlineReturnsTrueWhenTheJobFinishesFirst) {
  SimEnv sim;
  WriteQueue q(1 << 20, 5000 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  const uint64_t t = q.Push(Recording(&log, &mu, 1, 10));
  EXPECT_TRUE(q.WaitFor(t, sim.MonotonicMicros() + 1));  // simulated time never reaches it
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{1}));
}

size_t LogSize(const std::vector<int>& log, std::mutex& mu) {
  std::lock_guard<std::mutex> lock(mu);
  return log.size();
}

// Waits (yielding, in real time) until the worker has run n jobs; false after a minute (a broken queue
// fails instead of hanging). No assertion depends on how long this takes.
bool AwaitLog(const std::vector<int>& log, std::mutex& mu, size_t n) {
  const auto cap = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (LogSize(log, mu) < n) {
    if (std::chrono::steady_clock::now() > cap) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(WriteQueueTest, AJobWaitsWhileForegroundIsActiveAndRunsAfterEnd) {
  SimEnv sim;
  WriteQueue q(1 << 20, 30'000 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  const uint64_t t = q.Push(Recording(&log, &mu, 1, 100));
  ASSERT_TRUE(sim.AwaitWaiters(1));  // the worker is deferring the job (waiting out max_defer)
  EXPECT_EQ(LogSize(log, mu), 0u);
  EXPECT_EQ(q.stats().queued_jobs, 1u);
  q.BeginForeground();  // nested: still busy after one End
  q.EndForeground();
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(LogSize(log, mu), 0u);
  const int64_t before = sim.MonotonicMicros();
  q.EndForeground();
  // Not WaitFor (it would itself lift the deferral): the job runs because foreground ended, with no
  // simulated time passing at all.
  ASSERT_TRUE(AwaitLog(log, mu, 1));
  EXPECT_EQ(sim.MonotonicMicros(), before);
  EXPECT_TRUE(q.WaitFor(t));
}

TEST(WriteQueueTest, ForegroundGuardDefersUntilItIsDestroyed) {
  SimEnv sim;
  WriteQueue q(1 << 20, 30'000 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  auto guard = std::make_unique<WriteQueue::Foreground>(&q);
  q.Push(Recording(&log, &mu, 1, 100));
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(LogSize(log, mu), 0u);
  guard.reset();
  ASSERT_TRUE(AwaitLog(log, mu, 1));
  WriteQueue::Foreground none;  // default (no queue): a no-op
}

TEST(WriteQueueTest, EachHeadJobRunsExactlyAtItsMaxDeferWhileForegroundStaysBusy) {
  SimEnv sim;
  WriteQueue q(1 << 20, 200 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));
  q.Push(Recording(&log, &mu, 2, 100));
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.Advance(199 * kMs);
  ASSERT_TRUE(sim.AwaitWaiters(1));  // not due: still deferring
  EXPECT_EQ(LogSize(log, mu), 0u);
  sim.Advance(1 * kMs);  // job 1's max_defer is up
  ASSERT_TRUE(AwaitLog(log, mu, 1));
  // Job 2 became the head when job 1 started: it waits its own full max_defer from then.
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.Advance(199 * kMs);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(LogSize(log, mu), 1u);
  sim.Advance(1 * kMs);
  ASSERT_TRUE(AwaitLog(log, mu, 2));
  q.EndForeground();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
}

TEST(WriteQueueTest, AnUrgentJobInBetweenDoesNotRestartTheDeferredHeadsClock) {
  SimEnv sim;
  WriteQueue q(1 << 20, 200 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.Advance(150 * kMs);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  WriteJob urgent = Recording(&log, &mu, 9, 100);
  urgent.urgent = true;
  q.Push(std::move(urgent));  // never deferred: runs now, ahead of job 1
  ASSERT_TRUE(AwaitLog(log, mu, 1));
  ASSERT_TRUE(sim.AwaitWaiters(1));  // job 1 is the head again, with its clock from before
  sim.Advance(49 * kMs);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(LogSize(log, mu), 1u);
  sim.Advance(1 * kMs);  // 200 ms since job 1 became the head
  ASSERT_TRUE(AwaitLog(log, mu, 2));
  q.EndForeground();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{9, 1}));
}

TEST(WriteQueueTest, UrgentJobsAreNotDeferred) {
  SimEnv sim;
  WriteQueue q(1 << 20, 30'000 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));  // ordinary: deferred
  WriteJob urgent = Recording(&log, &mu, 9, 100);
  urgent.urgent = true;
  q.Push(std::move(urgent));
  ASSERT_TRUE(AwaitLog(log, mu, 1));
  ASSERT_TRUE(sim.AwaitWaiters(1));  // back to deferring the ordinary one
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(log, (std::vector<int>{9}));  // the urgent one ran; the ordinary one still waits
  }
  q.EndForeground();
  ASSERT_TRUE(q.WaitFor(q.last_ticket()));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{9, 1}));
}

TEST(WriteQueueTest, WaitForIsNotDeferred) {
  SimEnv sim;
  WriteQueue q(1 << 20, 30'000 * kMs, &sim);
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));
  const uint64_t t = q.Push(Recording(&log, &mu, 2, 100));
  // A flush while generation is still running: it does not wait out max_defer (simulated time stands
  // still, so waiting for it would never end).
  EXPECT_TRUE(q.WaitFor(t));
  q.EndForeground();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
}

TEST(WriteQueueTest, StopDoesNotWaitForForeground) {
  SimEnv sim;
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  auto q = std::make_unique<WriteQueue>(1 << 20, 30'000 * kMs, &sim);
  q->BeginForeground();  // never ended
  q->Push(Recording(&log, &mu, 1, 100, &done));
  ASSERT_TRUE(sim.AwaitWaiters(1));
  q->Stop();  // simulated time never reaches max_defer: waiting for it would hang here
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(log.empty());
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ember
