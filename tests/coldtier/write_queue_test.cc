// The serial background writer: order, the byte cap (oldest unstarted dropped), urgent jobs, WaitFor, Stop,
// and deferral while foreground (generation) work is active.
#include "coldtier/write_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <future>
#include <mutex>
#include <vector>

namespace ember {
namespace {

// A job the worker blocks in until released, so tests control what is "started" and what is queued.
struct Gate {
  std::promise<void> entered, release;
  std::shared_future<void> released{release.get_future().share()};
  WriteJob Job() {
    WriteJob j;
    j.kind = "gate";
    j.run = [this] {
      entered.set_value();
      released.wait();
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
  gate.entered.get_future().wait();  // the worker is busy: everything below stays queued
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
  gate.entered.get_future().wait();
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

TEST(WriteQueueTest, WaitForTimesOutWhileAJobRunsAndStopDropsTheRest) {
  auto q = std::make_unique<WriteQueue>(1 << 20);
  Gate gate;
  q->Push(gate.Job());
  gate.entered.get_future().wait();
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  const uint64_t t = q->Push(Recording(&log, &mu, 1, 10, &done));
  EXPECT_FALSE(q->WaitFor(t, std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
  std::thread stopper([&] { q->Stop(); });
  // Stop drops the queued job at once (its done hears about it), then waits for the running one.
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!done.empty()) break;
    }
    std::this_thread::yield();
  }
  gate.release.set_value();
  stopper.join();
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(done[0].code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(q->WaitFor(t));
  // After Stop a push is dropped immediately.
  q->Push(Recording(&log, &mu, 2, 10, &done));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].code(), StatusCode::kFailedPrecondition);
}

// Deferral tests assert state/ordering with generous bounds; none relies on the machine being fast
// except "runs after End", which allows seconds.
using std::chrono::milliseconds;

bool Ran(const std::vector<int>& log, std::mutex& mu) {
  std::lock_guard<std::mutex> lock(mu);
  return !log.empty();
}

TEST(WriteQueueTest, AJobWaitsWhileForegroundIsActiveAndRunsAfterEnd) {
  WriteQueue q(1 << 20, std::chrono::seconds(30));  // max_defer far beyond the test
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  const uint64_t t = q.Push(Recording(&log, &mu, 1, 100));
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(Ran(log, mu));
  EXPECT_EQ(q.stats().queued_jobs, 1u);
  q.BeginForeground();  // nested: still busy after one End
  q.EndForeground();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(Ran(log, mu));
  q.EndForeground();
  // Poll (WaitFor would itself lift the deferral). Well under max_defer: it ran because foreground ended.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!Ran(log, mu) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(Ran(log, mu));
  EXPECT_TRUE(q.WaitFor(t));
}

TEST(WriteQueueTest, ForegroundGuardDefersUntilItIsDestroyed) {
  WriteQueue q(1 << 20, std::chrono::seconds(30));
  std::vector<int> log;
  std::mutex mu;
  auto guard = std::make_unique<WriteQueue::Foreground>(&q);
  q.Push(Recording(&log, &mu, 1, 100));
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(Ran(log, mu));
  guard.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!Ran(log, mu) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(Ran(log, mu));
  WriteQueue::Foreground none;  // default (no queue): a no-op
}

TEST(WriteQueueTest, AJobRunsAfterMaxDeferEvenIfForegroundStaysBusy) {
  WriteQueue q(1 << 20, milliseconds(200));
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  const auto pushed = std::chrono::steady_clock::now();
  q.Push(Recording(&log, &mu, 1, 100));
  q.Push(Recording(&log, &mu, 2, 100));
  const auto deadline = pushed + std::chrono::seconds(20);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (log.size() == 2) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "deferred jobs never ran";
    std::this_thread::sleep_for(milliseconds(5));
  }
  // Each job waited its own max_defer at the head: at least ~2 x 200 ms in all (sleep slack aside).
  EXPECT_GE(std::chrono::steady_clock::now() - pushed, milliseconds(380));
  q.EndForeground();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
}

TEST(WriteQueueTest, UrgentJobsAreNotDeferred) {
  WriteQueue q(1 << 20, std::chrono::seconds(30));
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));  // ordinary: deferred
  WriteJob urgent = Recording(&log, &mu, 9, 100);
  urgent.urgent = true;
  q.Push(std::move(urgent));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!Ran(log, mu) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  std::this_thread::sleep_for(milliseconds(100));
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
  WriteQueue q(1 << 20, std::chrono::seconds(30));
  std::vector<int> log;
  std::mutex mu;
  q.BeginForeground();
  q.Push(Recording(&log, &mu, 1, 100));
  const uint64_t t = q.Push(Recording(&log, &mu, 2, 100));
  // A flush while generation is still running: it does not wait out max_defer (30 s).
  EXPECT_TRUE(q.WaitFor(t, std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  q.EndForeground();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
}

TEST(WriteQueueTest, StopDoesNotWaitForForeground) {
  std::vector<int> log;
  std::vector<Status> done;
  std::mutex mu;
  auto q = std::make_unique<WriteQueue>(1 << 20, std::chrono::seconds(30));
  q->BeginForeground();  // never ended
  q->Push(Recording(&log, &mu, 1, 100, &done));
  const auto t0 = std::chrono::steady_clock::now();
  q->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));  // not max_defer (30 s)
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(log.empty());
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ember
