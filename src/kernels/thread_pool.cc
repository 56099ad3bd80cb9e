#include "kernels/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace ember::kernels {
namespace {

// ~50 µs of spinning (PAUSE is ~60 cycles on Zen 2+): long enough to bridge the gap between two kernels of one decode step, short
// enough that an idle server does not burn a core.
constexpr int kSpinIterations = 2000;

inline void CpuRelax() { _mm_pause(); }

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lk(&mu_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.SignalAll();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Partition(int64_t n, int parts, int i, int64_t* begin, int64_t* end) {
  // The first n % parts ranges get one extra element: sizes differ by at most one.
  const int64_t base = n / parts, extra = n % parts;
  *begin = i * base + std::min<int64_t>(i, extra);
  *end = *begin + base + (i < extra ? 1 : 0);
}

bool ThreadPool::ClaimGuided(int64_t* b, int64_t* e) {
  int64_t at = next_.load(std::memory_order_relaxed);
  int64_t end;
  do {
    if (at >= job_n_) return false;
    // Half a thread's share of what is left, but at most ~1/8 of its share of the whole: a thread
    // the machine stalls then holds up no more than ParallelForChunks' chunks would.
    const int64_t want = std::max<int64_t>(1, std::min((job_n_ - at) / (2 * n_threads_), job_n_ / (8 * n_threads_)));
    end = std::min(job_n_, at + (want + job_chunk_ - 1) / job_chunk_ * job_chunk_);
  } while (!next_.compare_exchange_weak(at, end, std::memory_order_relaxed));
  *b = at;
  *e = end;
  return true;
}

void ThreadPool::RunShare(int index) {
  if (job_guided_) {
    int64_t b, e;
    while (ClaimGuided(&b, &e)) (*job_fn_)(b, e, index);
    return;
  }
  if (job_chunk_ > 0) {
    for (;;) {
      const int64_t b = next_.fetch_add(job_chunk_, std::memory_order_relaxed);
      if (b >= job_n_) return;
      (*job_fn_)(b, std::min(job_n_, b + job_chunk_), index);
    }
  }
  int64_t b = 0, e = 0;
  Partition(job_n_, n_threads_, index, &b, &e);
  if (b < e) (*job_fn_)(b, e, index);
}

void ThreadPool::ParallelFor(int64_t n, const RangeFn& fn) { Run(n, 0, false, fn); }

void ThreadPool::ParallelForChunks(int64_t n, int64_t chunk, const RangeFn& fn) {
  Run(n, std::max<int64_t>(1, chunk), false, fn);
}

void ThreadPool::ParallelForGuided(int64_t n, int64_t granule, const RangeFn& fn) {
  Run(n, std::max<int64_t>(1, granule), true, fn);
}

void ThreadPool::Run(int64_t n, int64_t chunk, bool guided, const RangeFn& fn) {
  if (n <= 0) return;
  if (chunk > 0 && (n_threads_ == 1 || chunk >= n)) {  // one thread's worth: run it here
    if (guided) {
      fn(0, n, 0);
      return;
    }
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk), 0);
    return;
  }
  if (n_threads_ == 1 || n == 1) {
    fn(0, n, 0);
    return;
  }
  job_fn_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  job_guided_ = guided;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // Incrementing under the mutex means a worker that checks the predicate under it cannot miss us.
    MutexLock lk(&mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.SignalAll();
  RunShare(0);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) CpuRelax(); else std::this_thread::yield();
  }
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spins = 0; g == seen && spins < kSpinIterations; ++spins) {
      CpuRelax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      MutexLock lk(&mu_);
      while (generation_.load(std::memory_order_acquire) == seen) cv_.Wait(&mu_);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    RunShare(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

int PhysicalCoreCount() {
  std::set<std::pair<std::string, std::string>> cores;
  for (int cpu = 0; cpu < 4096; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
    if (!pkg || !core) {
      if (cpu > 0) break;  // CPUs are numbered densely on Linux; the first gap ends the scan
      continue;
    }
    std::string p, c;
    pkg >> p;
    core >> c;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace ember::kernels
