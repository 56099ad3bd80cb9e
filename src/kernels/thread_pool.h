// A persistent pool of worker threads for data-parallel kernels.
//
// Threads are created once, in the constructor; ParallelFor hands work over with a spin-then-wait
// handoff, so a decode step's hundreds of parallel regions each cost ~a microsecond, not a thread start.
//
// Contract:
//  * ParallelFor may be called by ONE owner thread at a time (the pool is not re-entrant and not
//    thread-safe across callers; concurrent calls from different threads are a caller bug).
//  * ParallelFor's split of [0, n) is a deterministic static partition that depends only on (n, size()):
//    thread i gets the i-th of size() near-equal contiguous ranges. Kernels compute every output
//    element entirely within one call of fn, so results never depend on the split anyway.
//  * fn must not throw. The owner thread participates as thread 0.
//  * The destructor joins all workers; no ParallelFor may be in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "util/mutex.h"

namespace ember::kernels {

class ThreadPool {
 public:
  using RangeFn = std::function<void(int64_t begin, int64_t end, int thread)>;

  // n_threads < 1 is treated as 1. Creates n_threads - 1 workers (the caller is thread 0).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(begin, end, thread) for each non-empty range of the static partition of [0, n) and
  // returns when all have finished. n <= 0 returns at once. Threads whose range is empty are not called.
  void ParallelFor(int64_t n, const RangeFn& fn);

  // Like ParallelFor, but threads claim consecutive chunks of `chunk` indices (the last one shorter)
  // from a shared counter until none is left, so a thread the OS or hypervisor stalls holds up only
  // the chunk it has. Which thread runs which chunk varies from call to call: only for work whose
  // results do not depend on it (every kernel here). chunk < 1 is treated as 1.
  void ParallelForChunks(int64_t n, int64_t chunk, const RangeFn& fn);

  // Like ParallelForChunks, but chunks shrink as the work runs out ("guided"): each claim takes
  // remaining / (2 * size()) indices, capped at n / (8 * size()) and rounded up to a multiple of
  // `granule` (< 1: 1), so the last claims are one granule and the threads finish within about a
  // granule of each other, where fixed chunks leave one idle for half a chunk on average. Every chunk
  // starts at a multiple of `granule`.
  void ParallelForGuided(int64_t n, int64_t granule, const RangeFn& fn);

  // The static partition used by ParallelFor: range of thread `i` out of `parts` over [0, n).
  static void Partition(int64_t n, int parts, int i, int64_t* begin, int64_t* end);

 private:
  void WorkerLoop(int index);
  void RunShare(int index);
  void Run(int64_t n, int64_t chunk, bool guided, const RangeFn& fn);
  // The next guided chunk [*b, *e) claimed from next_; false when none is left.
  bool ClaimGuided(int64_t* b, int64_t* e);

  const int n_threads_;
  std::vector<std::thread> workers_;
  // Published job: workers spin on generation_, then fall back to the condition variable.
  const RangeFn* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;             // 0: static partition; else chunk size (granule) claimed from next_
  bool job_guided_ = false;           // chunks shrink with what is left (ParallelForGuided)
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // Guards no data (the job fields above are published through generation_): a generation_ bump made
  // under it cannot slip between a sleeping worker's check and its wait.
  Mutex mu_;
  CondVar cv_;
};

// Number of physical cores (distinct (package, core) pairs in /sys/devices/system/cpu/*/topology),
// falling back to std::thread::hardware_concurrency(), and at least 1. The default for --threads.
int PhysicalCoreCount();

}  // namespace ember::kernels
