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

std::shared_ptr<GenerationJob> Scheduler::NextHead(bool* admitting) {
  MutexLock lock(&mu_);
  while (true) {
    // While another lane asks TryAdmit for the head, the head is its: wait (FIFO, no overtaking).
    if (!admitting_ && !queue_.empty()) {
      std::shared_ptr<GenerationJob> head = queue_.front();
      if (head->cancelled()) {
        queue_.pop_front();
        *admitting = false;
        return head;
      }
      admitting_ = true;
      *admitting = true;
      return head;
    }
    if (stopping_ && queue_.empty()) return nullptr;  // drained
    cv_.Wait(&mu_);
  }
}

std::unique_ptr<Admission> Scheduler::Admit(const GenerationJob& head) {
  while (!head.cancelled()) {
    // Outside the lock: TryAdmit may evict or demote cache entries to make room.
    if (std::unique_ptr<Admission> admission = backend_->TryAdmit(head.request())) return admission;
    MutexLock lock(&mu_);
    if (!head_refused_) {
      head_refused_ = true;
      ++admission_waits_;
    }
    // Memory comes back when a generation ends (its Admission is released) or when the cache shrinks
    // on another thread (no signal for that: the poll).
    const uint64_t ended = generations_ended_;
    const int64_t deadline = env_->MonotonicMicros() + kAdmissionPollMicros;
    while (generations_ended_ == ended && !head.cancelled() && !env_->WaitUntil(&cv_, &mu_, deadline)) {
    }
  }
  return nullptr;
}

void Scheduler::LaneLoop(int32_t lane) {
  while (true) {
    bool admitting = false;
    std::shared_ptr<GenerationJob> job = NextHead(&admitting);
    if (job == nullptr) return;
    std::unique_ptr<Admission> admission;
    if (admitting) {
      admission = Admit(*job);
      {
        MutexLock lock(&mu_);
        queue_.pop_front();  // still `job`: only the admitting lane takes the head
        admitting_ = false;
        head_refused_ = false;
        if (admission) lanes_[static_cast<size_t>(lane)].job = job;
      }
      cv_.SignalAll();  // the next free lane may ask for the new head
    }
    GenerationResult result;
    result.prompt_tokens = static_cast<int32_t>(job->request().prompt.size());
    Status status;
    if (admission == nullptr) {
      result.finish_reason = FinishReason::kCancelled;  // client left while queued: skip the work
    } else {
      GenerationRequest request = job->request();
      request.lane = lane;
      request.admission = admission.get();
      status = RunGuarded(*job, request, &result);
      admission.reset();  // before the waiting lane is woken, so its retry sees the memory free
    }
    {
      // Counted before the client hears kDone, so /stats never lags what a client has seen.
      MutexLock lock(&mu_);
      Lane& l = lanes_[static_cast<size_t>(lane)];
      if (l.job) {
        l.job.reset();
        ++l.completed;
        ++generations_ended_;
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
  MutexLock lock(&mu_);
  Stats s;
  s.queued = LiveQueuedLocked();
  s.completed = completed_;
  s.rejected = rejected_;
  s.max_queue = max_queue_;
  s.lanes = lanes_.size();
  s.waiting_for_memory = head_refused_ && !queue_.empty() && !queue_.front()->cancelled() ? 1 : 0;
  s.admission_waits = admission_waits_;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const bool busy = lanes_[i].job != nullptr;
    s.running += busy ? 1 : 0;
    s.lane_states.push_back({static_cast<int32_t>(i), busy, lanes_[i].completed});
  }
  return s;
}

}  // namespace ember::server
