// Fair FIFO admission to ONE generation lane (continuous batching comes later). HTTP workers tokenize,
// template and stream concurrently; only backend Generate() calls are serialized here, in arrival order.
// Thread-safe. The lane thread is the only caller of InferenceBackend::Generate.
#pragma once

#include <deque>
#include <memory>
#include <thread>

#include "server/backend.h"
#include "server/generation_job.h"
#include "util/mutex.h"

namespace ember::server {

class Scheduler {
 public:
  // `max_queue`: jobs allowed to wait (the running one not counted); more are refused.
  Scheduler(InferenceBackend* backend, size_t max_queue);
  ~Scheduler();  // Shutdown(0) if not done yet
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // kResourceExhausted when the queue is full, kFailedPrecondition after Shutdown began.
  Status Submit(std::shared_ptr<GenerationJob> job) EXCLUDES(mu_);
  // Stops admitting, lets queued and running jobs finish for up to `grace`, then cancels the rest and
  // joins the lane. Every submitted job gets its kDone event.
  void Shutdown(std::chrono::milliseconds grace) EXCLUDES(mu_);

  struct Stats {
    size_t queued = 0;
    size_t running = 0;
    uint64_t completed = 0;
    uint64_t rejected = 0;
    size_t max_queue = 0;
  };
  Stats stats() const EXCLUDES(mu_);

 private:
  void LaneLoop() EXCLUDES(mu_);
  Status RunGuarded(GenerationJob& job, GenerationResult* result) EXCLUDES(mu_);
  size_t LiveQueuedLocked() const REQUIRES(mu_);

  InferenceBackend* const backend_;
  const size_t max_queue_;
  mutable Mutex mu_;
  CondVar cv_;  // a job was queued or finished, or stopping began
  std::deque<std::shared_ptr<GenerationJob>> queue_ GUARDED_BY(mu_);
  std::shared_ptr<GenerationJob> running_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t completed_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_ GUARDED_BY(mu_) = 0;
  std::thread lane_;
};

}  // namespace ember::server
