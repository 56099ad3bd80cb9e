// Fair FIFO queue to the backend's generation lanes. HTTP workers tokenize, template and stream
// concurrently; here, `backend->max_parallel()` lane threads (read once, at construction) run
// InferenceBackend::Generate, each on one job at a time, in arrival order. Thread-safe.
//
// Memory admission is not here: it lives inside the backend's Generate (its one FIFO queue; the engine's
// BatchRunner admits against the KV budget, docs/batching.md), where a lane's call waits while its job
// does not fit. The scheduler only reports it (memory_waits()): such a job counts as queued, not
// running, and against the queue limit. A job cancelled while queued here completes as kCancelled
// without running; one cancelled while waiting inside Generate is ended by the backend (its contract).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "server/generation_job.h"
#include "util/env.h"
#include "util/mutex.h"

namespace ember::server {

class Scheduler {
 public:
  // `max_queue`: jobs allowed to wait, those waiting for memory included (the running ones not
  // counted); more are refused. `env`: the clock of the shutdown grace.
  Scheduler(InferenceBackend* backend, size_t max_queue, Env* env = Env::Default());
  ~Scheduler();  // Shutdown(0) if not done yet
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // kResourceExhausted when the queue is full, kFailedPrecondition after Shutdown began.
  Status Submit(std::shared_ptr<GenerationJob> job) EXCLUDES(mu_);
  // Stops admitting, lets queued and running jobs (on every lane) finish for up to `grace`, then
  // cancels the rest and joins the lanes. Every submitted job gets its kDone event.
  void Shutdown(std::chrono::milliseconds grace) EXCLUDES(mu_);

  struct LaneState {
    int32_t lane = 0;
    bool busy = false;           // running a generation now
    uint64_t completed = 0;      // generations this lane ran to their end (any outcome)
  };
  struct Stats {
    size_t queued = 0;           // live jobs waiting, the one waiting for memory (in the backend) included
    size_t running = 0;          // lanes busy, less the one whose job waits for memory
    uint64_t completed = 0;
    uint64_t rejected = 0;
    size_t max_queue = 0;
    size_t lanes = 0;
    // The backend's memory_waits(): 0 or 1 (its oldest waiting job; FIFO keeps the rest behind it).
    size_t waiting_for_memory = 0;
    uint64_t admission_waits = 0;  // jobs that had to wait for memory at least once
    std::vector<LaneState> lane_states;
  };
  Stats stats() const EXCLUDES(mu_);

 private:
  struct Lane {
    std::shared_ptr<GenerationJob> job;  // running now, or null
    uint64_t completed = 0;
  };

  void LaneLoop(int32_t lane) EXCLUDES(mu_);
  // Pops the oldest job for `lane`, which owns it when `*run` (it was not cancelled while queued); null
  // when stopping and drained.
  std::shared_ptr<GenerationJob> NextJob(int32_t lane, bool* run) EXCLUDES(mu_);
  Status RunGuarded(GenerationJob& job, const GenerationRequest& request, GenerationResult* result)
      EXCLUDES(mu_);
  size_t LiveQueuedLocked() const REQUIRES(mu_);
  bool IdleLocked() const REQUIRES(mu_);

  InferenceBackend* const backend_;
  const size_t max_queue_;
  Env* const env_;
  mutable Mutex mu_;
  CondVar cv_;  // a job was queued or finished, or stopping began
  std::deque<std::shared_ptr<GenerationJob>> queue_ GUARDED_BY(mu_);
  std::vector<Lane> lanes_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t completed_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_ GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace ember::server
