#include "bench/read_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "util/stopwatch.h"

namespace ember::bench {
namespace {

constexpr size_t kBytes = size_t{512} << 20;
constexpr size_t kAlign = size_t{2} << 20;

// Eight independent sums (vectorised by the compiler): the loads, not an add chain, set the pace.
uint64_t SumSlice(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  uint64_t t = 0;
  for (uint64_t v : s) t += v;
  return t;
}

// One pass of `threads` threads over buf: GB/s.
double OnePass(const uint64_t* buf, size_t n, int threads) {
  std::vector<std::thread> ts;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  const Stopwatch t0;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      const size_t b = n * static_cast<size_t>(t) / static_cast<size_t>(threads) / 8 * 8;
      const size_t e = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads) / 8 * 8;
      sums[static_cast<size_t>(t)] = SumSlice(buf + b, e - b);
    });
  }
  for (auto& th : ts) th.join();
  const double s = t0.ElapsedSeconds();
  if (sums[0] == 42) std::fprintf(stderr, " ");  // keeps the loads
  return static_cast<double>(n * sizeof(uint64_t)) / s / 1e9;
}

// Best of `passes` over a fresh 2 MiB-aligned anonymous buffer, advised `advice`.
double Measure(int threads, int passes, int advice) {
  void* m = mmap(nullptr, kBytes + kAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  auto* p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m) + kAlign - 1) & ~(kAlign - 1));
  (void)madvise(p, kBytes, advice);  // EINVAL without THP: plain pages then
  std::memset(p, 1, kBytes);         // faults every page in before the clock runs
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    best = std::max(best, OnePass(reinterpret_cast<const uint64_t*>(p), kBytes / sizeof(uint64_t), threads));
  }
  munmap(m, kBytes + kAlign);
  return best;
}

}  // namespace

ReadBandwidth MeasureReadBandwidth(int threads, int passes) {
  threads = std::max(1, threads);
  passes = std::max(1, passes);
  ReadBandwidth r;
  r.small_pages_gbs = Measure(threads, passes, MADV_NOHUGEPAGE);
  r.huge_pages_gbs = Measure(threads, passes, MADV_HUGEPAGE);
  return r;
}

}  // namespace ember::bench
