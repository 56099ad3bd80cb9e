// Decode on 2 MiB pages against 4 KiB pages, in one process with interleaved rounds (not part of the
// test suite): two engines on one file, one with EngineOptions::huge_pages (loaded first, so the page
// cache holds the file in 2 MiB folios) and one without (MADV_NOHUGEPAGE: the same folios mapped with
// 4 KiB entries), plus a plain read of a 512 MiB buffer on 2 MiB pages. Build by hand (one line):
//   g++ -std=c++20 -O3 -march=native -I src -I tests tests/engine/bench/decode_pages_bench.cc build/libember_engine.a
//     build/libember_model.a build/libember_tokenizer.a build/libember_template.a build/libember_grammar.a
//     build/libember_kv.a build/libember_kernels.a build/libember_format.a build/libember_util.a -lxxhash
//     -o /tmp/decode_pages_bench
// Usage: decode_pages_bench MODEL [threads] [rounds] [tg] [pp]
// GB/s = weight bytes per decoded token x tokens / time; with one thread the time is the thread's CPU
// time (a shared machine's preemption does not count), with more it is wall time.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "support/bench_util.h"

using namespace ember;

namespace {

double Seconds(int threads) {
  if (threads > 1) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return testing::ThreadCpuSeconds();
}

uint64_t Sum(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [threads] [rounds] [tg] [pp]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 7;
  const int tg = argc > 4 ? std::atoi(argv[4]) : 32;
  const int pp = argc > 5 ? std::atoi(argv[5]) : 256;
  EngineOptions eo;
  eo.threads = threads;
  eo.load_tokenizer = false;
  std::unique_ptr<Engine> engines[2];  // [0] 4 KiB pages, [1] 2 MiB pages
  for (int h = 1; h >= 0; --h) {
    eo.huge_pages = h == 1;
    auto e = Engine::Load(argv[1], eo);
    if (!e.ok()) {
      std::fprintf(stderr, "%s\n", e.status().ToString().c_str());
      return 1;
    }
    engines[h] = std::move(*e);
    const WeightPages& wp = engines[h]->weight_pages();
    std::printf("engine huge_pages=%d: %.0f%% of %.0f MB on 2 MiB pages%s\n", h,
                wp.bytes ? 100.0 * static_cast<double>(wp.huge_bytes) / static_cast<double>(wp.bytes) : 0.0,
                static_cast<double>(wp.bytes) / 1e6, wp.reread ? " (re-read)" : "");
  }
  const size_t n = size_t{512} << 20, align = size_t{2} << 20;
  void* map = mmap(nullptr, n + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto* raw = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(map) + align - 1) & ~(align - 1));
  madvise(raw, n, MADV_HUGEPAGE);
  std::memset(raw, 1, n);
  std::mt19937 rng(1);
  std::vector<int32_t> prompt(static_cast<size_t>(pp));
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % 32000);
  const double wbytes = static_cast<double>(engines[0]->model().weight_bytes());
  const int64_t nv = engines[0]->model().config().n_vocab;
  std::vector<double> gbs[3];
  for (int round = 0; round < rounds; ++round) {
    for (int h = 0; h < 2; ++h) {
      Engine& e = *engines[h];
      auto seq = e.NewSequence();
      const float* logits = *e.Prefill(**seq, prompt);
      const double t0 = Seconds(threads);
      for (int i = 0; i < tg; ++i) {
        const auto tok = static_cast<int32_t>(std::max_element(logits, logits + nv) - logits);
        logits = *e.Decode(**seq, tok);
      }
      gbs[h].push_back(wbytes * tg / (Seconds(threads) - t0) / 1e9);
    }
    const double t0 = Seconds(1);
    const volatile uint64_t s = Sum(reinterpret_cast<const uint64_t*>(raw), n / 8);
    (void)s;
    gbs[2].push_back(static_cast<double>(n) / (Seconds(1) - t0) / 1e9);
  }
  const char* what[] = {"decode, 4 KiB pages", "decode, 2 MiB pages", "read, 2 MiB pages (1 thread)"};
  for (int k = 0; k < 3; ++k) {
    const auto [lo, hi] = std::minmax_element(gbs[k].begin(), gbs[k].end());
    std::printf("%-29s median %6.2f GB/s (min %6.2f max %6.2f)\n", what[k], testing::Median(gbs[k]), *lo, *hi);
  }
  std::printf("2 MiB / 4 KiB decode: %.2fx\n", testing::Median(gbs[1]) / testing::Median(gbs[0]));
  munmap(map, n + align);
  return 0;
}
