#include "server/scheduler.h"

#include <algorithm>
#include <exception>
#include <string>

#include "util/env.h"

namespace ember::server {

Scheduler::Scheduler(InferenceBackend* backend, size_t max_queue)
    : backend_(backend), max_queue_(max_queue), lane_([this] { LaneLoop(); }) {}

Scheduler::~Scheduler() { Shutdown(std::chrono::milliseconds(0)); }

size_t Scheduler::LiveQueuedLocked() const {
  // Jobs whose client already left still sit in the deque until the lane skips them; they do not count.
  return static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [](const auto& j) { return !j->cancelled(); }));
}

Status Scheduler::Submit(std::shared_ptr<GenerationJob> job) {
  {
    MutexLock lock(&mu_);
    if (stopping_) return FailedPrecondition("the server is shutting down");
    if (LiveQueuedLocked() >= max_queue_) {
      ++rejected_;
      return ResourceExhausted("the generation queue is full (" + std::to_string(max_queue_) +
                               " waiting); retry later");
    }
    queue_.push_back(std::move(job));
  }
  cv_.SignalAll();
  return Status::Ok();
}

// The lane is shared by every request: whatever one generation throws (a backend bug, bad_alloc) fails
// that request alone, with a 500 that says what happened, and the lane goes on to the next job.
Status Scheduler::RunGuarded(GenerationJob& job, GenerationResult* result) {
  const int32_t prompt_tokens = result->prompt_tokens;
  std::string what;
  try {
    return backend_->Generate(job.request(), [&job](const TokenEvent& t) { return job.OnToken(t); }, result);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  *result = GenerationResult{};  // whatever the backend left there is not to be trusted
  result->prompt_tokens = prompt_tokens;
  return Internal("generation failed: " + what);
}

void Scheduler::LaneLoop() {
  while (true) {
    std::shared_ptr<GenerationJob> job;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = job;
    }
    GenerationResult result;
    result.prompt_tokens = static_cast<int32_t>(job->request().prompt.size());
    Status status;
    if (job->cancelled()) {
      result.finish_reason = FinishReason::kCancelled;  // client left while queued: skip the work
    } else {
      status = RunGuarded(*job, &result);
    }
    {
      // Counted before the client hears kDone, so /stats never lags what a client has seen.
      MutexLock lock(&mu_);
      running_.reset();
      ++completed_;
    }
    cv_.SignalAll();
    job->Complete(std::move(status), std::move(result));
  }
}

void Scheduler::Shutdown(std::chrono::milliseconds grace) {
  {
    Env* env = Env::Default();
    const int64_t deadline = env->MonotonicMicros() + std::chrono::microseconds(grace).count();
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
    while ((!queue_.empty() || running_ != nullptr) && !env->WaitUntil(&cv_, &mu_, deadline)) {
    }
    for (auto& job : queue_) job->Cancel();
    if (running_) running_->Cancel();
  }
  cv_.SignalAll();
  if (lane_.joinable()) lane_.join();
}

Scheduler::Stats Scheduler::stats() const {
  MutexLock lock(&mu_);
  return {LiveQueuedLocked(), running_ ? size_t{1} : size_t{0}, completed_, rejected_, max_queue_};
}

}  // namespace ember::server
