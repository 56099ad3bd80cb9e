// Micro-benchmark for the matmul kernels (not part of the test suite). Build by hand:
//   g++ -std=c++20 -O3 -march=native -I src tests/kernels/bench/kernels_bench.cc \
//     build-kernels/libember_kernels.a build-kernels/libember_format.a build-kernels/libember_util.a \
//     -lxxhash -lpthread -o /tmp/kernels_bench
// Usage: kernels_bench [threads] [n_tok] [decode MiB of weights] [types...]
// A small MiB (e.g. 2: L2/L3-resident) shows the compute ceiling; 128 shows DRAM streaming.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/matmul.h"

using namespace ember;
using namespace ember::kernels;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int64_t n_tok = argc > 2 ? std::atoll(argv[2]) : 1;
  std::vector<std::string> names;
  const int64_t mib = argc > 3 ? std::atoll(argv[3]) : 128;
  for (int i = 4; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) names = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "f16", "bf16", "f32"};
  ThreadPool pool(threads);
  const int64_t n_in = 4096;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> seed_rows(n_in * 16);
  for (auto& f : seed_rows) f = nd(rng);
  std::vector<float> x(n_in * n_tok);
  for (auto& f : x) f = nd(rng);
  for (const auto& name : names) {
    const GgmlType type = *GgmlTypeFromName(name);
    const size_t rb = RowBytes(type, n_in);
    // Decode: ~128 MB of weights (well past L3). Prefill: 4096 x 4096.
    const int64_t n_out = n_tok == 1 ? static_cast<int64_t>((mib << 20) / static_cast<int64_t>(rb)) / 16 * 16 : 4096;
    std::vector<uint8_t> w(rb * n_out);
    for (int r = 0; r < 16; ++r) (void)Quantize(type, &seed_rows[r * n_in], &w[r * rb], n_in);
    for (int64_t o = 16; o < n_out; ++o) std::memcpy(&w[o * rb], &w[(o % 16) * rb], rb);
    WeightView v{type, w.data(), n_in, n_out, rb};
    std::vector<float> y(n_out * n_tok);
    MatMul(v, x.data(), n_tok, y.data(), pool);  // warm up
    const int reps = n_tok == 1 ? (mib < 16 ? 200 : 10) : 3;
    // Under contention (shared machine) wall time is meaningless; with 1 thread the owner thread's
    // CPU time is what the kernel would take on an idle core.
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; ++r) {
      timespec c0, c1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
      const auto t0 = std::chrono::steady_clock::now();
      MatMul(v, x.data(), n_tok, y.data(), pool);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
      best_cpu = std::min(best_cpu, (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec));
    }
    if (threads == 1) best = best_cpu;
    const double gb = static_cast<double>(w.size()) / best / 1e9;
    const double gflop = 2.0 * n_in * n_out * n_tok / best / 1e9;
    std::printf("%-5s threads=%d n_tok=%-4lld %8.2f ms  %6.1f GB/s  %7.1f GFLOP/s  (%s)\n", name.c_str(), threads,
                static_cast<long long>(n_tok), best * 1e3, gb, gflop, MatMulBackendName());
  }
  return 0;
}
