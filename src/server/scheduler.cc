#include "server/scheduler.h"

#include <algorithm>
#include <exception>
#include <string>

namespace ember::server {

Scheduler::Scheduler(InferenceBackend* backend, size_t max_queue, Env* env)
    : backend_(backend), max_queue_(max_queue), env_(env != nullptr ? env : Env::Default()) {
  const int n = std::max(1, backend_->max_parallel());
  {
    MutexLock lock(&mu_);
    lanes_.resize(static_cast<size_t>(n));
  }
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { LaneLoop(i); });
}

Scheduler::~Scheduler() { Shutdown(std::chrono::milliseconds(0)); }

size_t Scheduler::LiveQueuedLocked() const {
  // Jobs whose client already left still sit in the deque until a lane skips them; they do not count.
  return static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [](const auto& j) { return !j->cancelled(); }));
}

bool Scheduler::IdleLocked() const {
  return queue_.empty() && std::none_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.job; });
}

Status Scheduler::Submit(std::shared_ptr<GenerationJob> job) {
  // Read before mu_ (the backend's lock is never taken under the scheduler's): the job waiting for
  // memory in the backend holds a queue slot too.
  const size_t memory_waiting = backend_->memory_waits().waiting;
  {
    MutexLock lock(&mu_);
    if (stopping_) return FailedPrecondition("the server is shutting down");
    if (LiveQueuedLocked() + memory_waiting >= max_queue_) {
      ++rejected_;
      return ResourceExhausted("the generation queue is full (" + std::to_string(max_queue_) +
                               " waiting); retry later");
    }
    queue_.push_back(std::move(job));
  }
  cv_.SignalAll();
  return Status::Ok();
}

// The lanes are shared by every request: whatever one generation throws (a backend bug, bad_alloc)
// fails that request alone, with a 500 that says what happened, and the lane goes on to the next job.
Status Scheduler::RunGuarded(GenerationJob& job, const GenerationRequest& request, GenerationResult* result) {
  const int32_t prompt_tokens = result->prompt_tokens;
  std::string what;
  try {
    return backend_->Generate(request, [&job](const TokenEvent& t) { return job.OnToken(t); }, result);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  *result = GenerationResult{};  // whatever the backend left there is not to be trusted
  result->prompt_tokens = prompt_tokens;
  return Internal("generation failed: " + what);
}

std::shared_ptr<GenerationJob> Scheduler::NextJob(int32_t lane, bool* run) {
  MutexLock lock(&mu_);
  while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
  if (queue_.empty()) return nullptr;  // stopping and drained
  std::shared_ptr<GenerationJob> job = std::move(queue_.front());
  queue_.pop_front();
  // Taken by the lane under the same lock as the pop, so Shutdown's idle check never misses it.
  *run = !job->cancelled();
  if (*run) lanes_[static_cast<size_t>(lane)].job = job;
  return job;
}

void Scheduler::LaneLoop(int32_t lane) {
  while (true) {
    bool run = false;
    std::shared_ptr<GenerationJob> job = NextJob(lane, &run);
    if (job == nullptr) return;
    GenerationResult result;
    result.prompt_tokens = static_cast<int32_t>(job->request().prompt.size());
    Status status;
    if (!run) {
      result.finish_reason = FinishReason::kCancelled;  // client left while queued: skip the work
    } else {
      // Memory admission happens inside Generate (it may wait there, FIFO, until the job's KV fits).
      GenerationRequest request = job->request();
      request.lane = lane;
      status = RunGuarded(*job, request, &result);
    }
    {
      // Counted before the client hears kDone, so /stats never lags what a client has seen.
      MutexLock lock(&mu_);
      Lane& l = lanes_[static_cast<size_t>(lane)];
      if (l.job) {
        l.job.reset();
        ++l.completed;
      }
      ++completed_;
    }
    cv_.SignalAll();
    job->Complete(std::move(status), std::move(result));
  }
}

void Scheduler::Shutdown(std::chrono::milliseconds grace) {
  {
    const int64_t deadline = env_->MonotonicMicros() + std::chrono::microseconds(grace).count();
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
    while (!IdleLocked() && !env_->WaitUntil(&cv_, &mu_, deadline)) {
    }
    for (auto& job : queue_) job->Cancel();
    for (Lane& l : lanes_) {
      if (l.job) l.job->Cancel();
    }
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

Scheduler::Stats Scheduler::stats() const {
  const MemoryWaits memory = backend_->memory_waits();  // before mu_, as in Submit
  MutexLock lock(&mu_);
  Stats s;
  s.completed = completed_;
  s.rejected = rejected_;
  s.max_queue = max_queue_;
  s.lanes = lanes_.size();
  s.waiting_for_memory = memory.waiting;
  s.admission_waits = memory.waits;
  size_t busy = 0;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const bool b = lanes_[i].job != nullptr;
    busy += b ? 1 : 0;
    s.lane_states.push_back({static_cast<int32_t>(i), b, lanes_[i].completed});
  }
  // A job waiting for memory sits on a busy lane inside Generate but has not started: it is queued.
  // (The two reads are not one snapshot: clamp, so a job that just left a lane never makes it negative.)
  const size_t waiting = std::min(memory.waiting, busy);
  s.queued = LiveQueuedLocked() + waiting;
  s.running = busy - waiting;
  return s;
}

}  // namespace ember::server
