// The cold tier's one serial, byte-capped background writer (docs/cache-spec.md §4.6). Spills, idle
// demotions, write-behind snapshots and pressure-relief writes all go through it, so disk writes never
// run on a generation thread and never overlap each other (ColdStore has one writer).
//
//   Push(job)       queues a job; while the bytes of queued (unstarted) ordinary jobs exceed the cap,
//                   the oldest unstarted one is dropped (counted; its `done` gets kResourceExhausted).
//                   A drop is a future cache miss, never a wrong answer. An urgent job (pressure relief,
//                   whose caller waits for it) goes to the front and is never dropped.
//   WaitFor(t)      blocks until every job with a ticket <= t has finished (ran or dropped), or until a
//                   deadline on the Env's monotonic clock.
//   BeginForeground()/EndForeground() (or a Foreground guard) mark generation in progress (a counter).
//                   While it is non-zero the worker does not *start* an ordinary job — it waits, up to
//                   max_defer from when that job became the head of the queue, so writes end up
//                   bounded-late, never starved. Nice 10 alone is not enough: on a 2-core machine the
//                   engine uses both cores and every serialize/checksum cycle is taken from decode.
//                   Never deferred: urgent jobs, and anything while a WaitFor is pending (a caller waits
//                   for the disk either way). A job already running is not interrupted.
//   Stop()          drops every unstarted job (done gets kFailedPrecondition), finishes the running one,
//                   joins. It never waits for foreground work to end.
//
// A job is two closures: `run` does the write on the worker thread and returns its Status; `done`
// (optional) is called right after on the worker thread with that Status — or with the drop status,
// on the pushing thread, when the job is dropped. Neither may call back into the queue's WaitFor.
//
// The worker thread runs at nice 10 so that serializing, checksumming and writing yield to generation.
//
// Time (max_defer, WaitFor deadlines) is read from the Env and waited on with Env::WaitUntil, so tests
// drive it with a simulated clock (tests/support/sim_env.h) instead of sleeping.
//
// Thread-safety: every method may be called from any thread. mu_ guards all state; callbacks (run,
// done) are called without it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <thread>

#include "util/env.h"
#include "util/mutex.h"
#include "util/status.h"
#include "util/thread_annotations.h"

namespace ember {

struct WriteJob {
  std::string kind;     // "spill", "demote", "write_behind", "relief" (counted per kind)
  uint64_t bytes = 0;   // what the job holds in memory until it runs (charged against the cap)
  bool urgent = false;  // front of the queue, never dropped (a caller is waiting on it)
  std::function<Status()> run;
  std::function<void(const Status&)> done;
};

struct WriteQueueStats {
  uint64_t queued_jobs = 0;     // not started yet
  uint64_t queued_bytes = 0;
  bool running = false;
  uint64_t pushed = 0, completed = 0, failed = 0, dropped = 0;
};

class WriteQueue {
 public:
  // RAII foreground marker: Begin on construction, End on destruction. A null queue makes it a no-op.
  class Foreground {
   public:
    Foreground() = default;
    explicit Foreground(WriteQueue* q) : q_(q) {
      if (q_ != nullptr) q_->BeginForeground();
    }
    Foreground(Foreground&& o) noexcept : q_(o.q_) { o.q_ = nullptr; }
    Foreground& operator=(Foreground&& o) noexcept {
      if (this != &o) {
        if (q_ != nullptr) q_->EndForeground();
        q_ = o.q_;
        o.q_ = nullptr;
      }
      return *this;
    }
    ~Foreground() {
      if (q_ != nullptr) q_->EndForeground();
    }

   private:
    WriteQueue* q_ = nullptr;
  };

  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

  // max_defer_us: the longest an ordinary job at the head of the queue waits for foreground work to end.
  // env: the clock (null: Env::Default()); it must outlive the queue.
  explicit WriteQueue(uint64_t cap_bytes, int64_t max_defer_us = 5'000'000, Env* env = nullptr);
  ~WriteQueue();  // Stop()
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // Returns the job's ticket (for WaitFor). After Stop() the job is dropped at once.
  uint64_t Push(WriteJob job);
  // The ticket of the last job pushed (0 if none).
  uint64_t last_ticket() const;
  // True once every job with ticket <= t has finished; false if the deadline (Env::MonotonicMicros)
  // passed first.
  bool WaitFor(uint64_t t, int64_t deadline_us = kNoDeadline);
  void Stop();
  // Generation in progress (nests; every Begin needs one End). See the comment at the top.
  void BeginForeground();
  void EndForeground();

  WriteQueueStats stats() const;
  uint64_t cap_bytes() const { return cap_; }

 private:
  struct Item {
    uint64_t ticket;
    WriteJob job;
  };
  void Worker();
  void FinishLocked(uint64_t ticket) REQUIRES(mu_);
  // The head job may wait for foreground work to end (not urgent, nobody waiting in WaitFor).
  bool DeferrableLocked() const REQUIRES(mu_);
  bool DoneLocked(uint64_t t) const REQUIRES(mu_);

  const uint64_t cap_;
  const int64_t max_defer_us_;
  Env* const env_;
  mutable Mutex mu_;
  CondVar work_cv_;  // worker: a job arrived, foreground ended, a waiter came, or stop
  CondVar done_cv_;  // waiters: a job finished
  std::deque<Item> queue_ GUARDED_BY(mu_);
  std::set<uint64_t> unfinished_ GUARDED_BY(mu_);  // tickets queued or running
  uint64_t next_ticket_ GUARDED_BY(mu_) = 1;
  WriteQueueStats st_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  int foreground_ GUARDED_BY(mu_) = 0;  // Begin/EndForeground nesting count
  int waiters_ GUARDED_BY(mu_) = 0;     // threads inside WaitFor
  std::thread worker_;  // last: it starts in the constructor and reads the members above
};

}  // namespace ember
