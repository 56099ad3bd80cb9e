// Fair FIFO admission to the backend's generation lanes. HTTP workers tokenize, template and stream
// concurrently; here, `backend->max_parallel()` lane threads (read once, at construction) run
// InferenceBackend::Generate, each on one job at a time, in arrival order. Thread-safe.
//
// Admission (docs/server.md, "Scheduler"): a free lane takes the oldest queued job only once
// `TryAdmit` grants it an Admission (its share of the KV budget). When the oldest does not fit, every
// later job waits behind it — no overtaking, so a large request is never starved by small ones — and
// the lane retries when a generation ends (its Admission is released) and every kAdmissionPollMicros
// (cache eviction on another thread can free memory too). One lane at a time asks TryAdmit. The
// Admission lives until Generate returns. A job cancelled while queued completes as kCancelled without
// running (within one poll when it was the one waiting for memory).
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
  // How often a lane retries the admission of a job that did not fit, besides every job completion.
  static constexpr int64_t kAdmissionPollMicros = 50'000;

  // `max_queue`: jobs allowed to wait, those waiting for memory included (the running ones not
  // counted); more are refused. `env`: the clock of the shutdown grace and the admission poll.
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
    size_t queued = 0;           // live jobs waiting, the one waiting for memory included
    size_t running = 0;          // lanes busy
    uint64_t completed = 0;
    uint64_t rejected = 0;
    size_t max_queue = 0;
    size_t lanes = 0;
    // Jobs a free lane could run but TryAdmit refused: 0 or 1 (the oldest; FIFO keeps the rest behind it).
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
  // Waits until this lane may take the queue's head. Returns it with `*admitting` set when this lane
  // became the one that asks TryAdmit for it, or with `*admitting` clear when it was cancelled while
  // queued (already popped); null when stopping and drained.
  std::shared_ptr<GenerationJob> NextHead(bool* admitting) EXCLUDES(mu_);
  // Asks TryAdmit for `head` until it is granted or `head` is cancelled (then null).
  std::unique_ptr<Admission> Admit(const GenerationJob& head) EXCLUDES(mu_);
  Status RunGuarded(GenerationJob& job, const GenerationRequest& request, GenerationResult* result)
      EXCLUDES(mu_);
  size_t LiveQueuedLocked() const REQUIRES(mu_);
  bool IdleLocked() const REQUIRES(mu_);

  InferenceBackend* const backend_;
  const size_t max_queue_;
  Env* const env_;
  mutable Mutex mu_;
  CondVar cv_;  // a job was queued or finished, the admitting lane is done, or stopping began
  std::deque<std::shared_ptr<GenerationJob>> queue_ GUARDED_BY(mu_);
  std::vector<Lane> lanes_ GUARDED_BY(mu_);
  bool admitting_ GUARDED_BY(mu_) = false;       // a lane is asking TryAdmit for queue_.front()
  bool head_refused_ GUARDED_BY(mu_) = false;    // ... and was refused at least once
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t completed_ GUARDED_BY(mu_) = 0;
  uint64_t generations_ended_ GUARDED_BY(mu_) = 0;  // Admissions released: a refused head retries
  uint64_t rejected_ GUARDED_BY(mu_) = 0;
  uint64_t admission_waits_ GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace ember::server
