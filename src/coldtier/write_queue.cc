#include "coldtier/write_queue.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

namespace ember {

WriteQueue::WriteQueue(uint64_t cap_bytes, int64_t max_defer_us, Env* env)
    : cap_(cap_bytes),
      max_defer_us_(max_defer_us),
      env_(env != nullptr ? env : Env::Default()),
      worker_([this] { Worker(); }) {}

WriteQueue::~WriteQueue() { Stop(); }

uint64_t WriteQueue::Push(WriteJob job) {
  std::vector<WriteJob> dropped;
  bool stopped = false;
  uint64_t ticket = 0;
  {
    MutexLock lock(&mu_);
    ticket = next_ticket_++;
    ++st_.pushed;
    if (stopping_) {
      stopped = true;
      ++st_.dropped;
      dropped.push_back(std::move(job));
    } else {
      unfinished_.insert(ticket);
      st_.queued_bytes += job.urgent ? 0 : job.bytes;  // urgent jobs are bounded by their waiting caller
      ++st_.queued_jobs;
      if (job.urgent) {
        queue_.push_front({ticket, std::move(job)});
      } else {
        queue_.push_back({ticket, std::move(job)});
      }
      // Over the cap: drop the oldest unstarted ordinary jobs (possibly the one just pushed, if it alone
      // is bigger than the cap: it would hold that much memory until the disk caught up).
      for (auto it = queue_.begin(); st_.queued_bytes > cap_ && it != queue_.end();) {
        if (it->job.urgent) {
          ++it;
          continue;
        }
        st_.queued_bytes -= it->job.bytes;
        --st_.queued_jobs;
        ++st_.dropped;
        FinishLocked(it->ticket);
        dropped.push_back(std::move(it->job));
        it = queue_.erase(it);
      }
    }
  }
  work_cv_.Signal();
  // Callbacks run outside the mutex (they may take other locks).
  for (WriteJob& j : dropped) {
    if (!j.done) continue;
    j.done(stopped ? Status(StatusCode::kFailedPrecondition, "cold-tier write queue stopped")
                   : ResourceExhausted("cold-tier write queue over its byte cap: " + j.kind + " dropped"));
  }
  if (!dropped.empty()) done_cv_.SignalAll();
  return ticket;
}

uint64_t WriteQueue::last_ticket() const {
  MutexLock lock(&mu_);
  return next_ticket_ - 1;
}

void WriteQueue::FinishLocked(uint64_t ticket) { unfinished_.erase(ticket); }

bool WriteQueue::DoneLocked(uint64_t t) const { return unfinished_.empty() || *unfinished_.begin() > t; }

bool WriteQueue::WaitFor(uint64_t t, int64_t deadline_us) {
  MutexLock lock(&mu_);
  if (DoneLocked(t)) return true;
  // A caller now waits for the disk (flush, relief): deferring for generation would only delay it.
  ++waiters_;
  work_cv_.SignalAll();
  bool ok = true;
  while (!DoneLocked(t)) {
    if (deadline_us == kNoDeadline) {
      done_cv_.Wait(&mu_);
    } else if (env_->WaitUntil(&done_cv_, &mu_, deadline_us) && !DoneLocked(t)) {
      ok = false;
      break;
    }
  }
  --waiters_;
  return ok;
}

void WriteQueue::BeginForeground() {
  MutexLock lock(&mu_);
  ++foreground_;
}

void WriteQueue::EndForeground() {
  {
    MutexLock lock(&mu_);
    if (--foreground_ > 0) return;
  }
  work_cv_.SignalAll();  // a deferred head job may start now
}

bool WriteQueue::DeferrableLocked() const {
  return foreground_ > 0 && waiters_ == 0 && !queue_.empty() && !queue_.front().job.urgent;
}

void WriteQueue::Worker() {
  // Writes must not slow generation (spec §4.6): the writer yields the CPU to the engine's threads.
  // Linux nice values are per thread; failure (e.g. a sandbox forbidding it) just leaves it at normal.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  MutexLock lock(&mu_);
  // The job at the head and since when (the max_defer clock). Kept across jobs so that an urgent job
  // running in between does not restart the clock of the ordinary job it jumped ahead of.
  uint64_t head_ticket = 0;
  int64_t head_since = env_->MonotonicMicros();
  for (;;) {
    while (!stopping_ && queue_.empty()) work_cv_.Wait(&mu_);
    // Yield to generation (see the header): wait while foreground work runs, bounded by max_defer.
    while (!stopping_ && DeferrableLocked()) {
      const int64_t now = env_->MonotonicMicros();
      if (queue_.front().ticket != head_ticket) {
        head_ticket = queue_.front().ticket;
        head_since = now;
      }
      if (now - head_since >= max_defer_us_) break;
      env_->WaitUntil(&work_cv_, &mu_, head_since + max_defer_us_);
    }
    if (queue_.empty()) {
      if (stopping_) return;  // stopping and nothing left (Stop drained the queue)
      continue;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (!queue_.empty() && queue_.front().ticket != head_ticket) {
      head_ticket = queue_.front().ticket;  // the next job becomes the head now
      head_since = env_->MonotonicMicros();
    }
    st_.queued_bytes -= item.job.urgent ? 0 : item.job.bytes;
    --st_.queued_jobs;
    st_.running = true;
    mu_.Unlock();
    Status st = item.job.run ? item.job.run() : Status::Ok();
    if (item.job.done) item.job.done(st);
    item.job = WriteJob{};  // release the entry it held before anyone is told it finished
    mu_.Lock();
    st_.running = false;
    ++st_.completed;
    if (!st.ok()) ++st_.failed;
    FinishLocked(item.ticket);
    done_cv_.SignalAll();
  }
}

void WriteQueue::Stop() {
  std::deque<Item> dropped;
  {
    MutexLock lock(&mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    dropped.swap(queue_);
    for (const Item& i : dropped) {
      FinishLocked(i.ticket);
      ++st_.dropped;
    }
    st_.queued_bytes = 0;
    st_.queued_jobs = 0;
  }
  work_cv_.SignalAll();
  for (Item& i : dropped) {
    if (i.job.done) i.job.done(Status(StatusCode::kFailedPrecondition, "cold-tier write queue stopped"));
  }
  done_cv_.SignalAll();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

WriteQueueStats WriteQueue::stats() const {
  MutexLock lock(&mu_);
  return st_;
}

}  // namespace ember
