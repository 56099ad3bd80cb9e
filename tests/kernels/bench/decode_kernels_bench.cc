// Decode row kernels (n_tok = 1), AVX2 against AVX-512, in one process with interleaved rounds (not part
// of the test suite). Build by hand (one line):
//   g++ -std=c++20 -O3 -march=native -I src -I tests tests/kernels/bench/decode_kernels_bench.cc
//     build/libember_kernels.a build/libember_format.a build/libember_util.a -lxxhash -o /tmp/decode_kernels_bench
// Usage: decode_kernels_bench MiB [n_in] [rounds] [types...]
// MiB of weights (2 MiB pages, MADV_HUGEPAGE): 1 keeps them in L2 (the kernel's compute ceiling), 256
// streams them from DRAM (what decode sees). Prints GB/s of weights per kernel, by the thread's CPU time
// (a shared machine's preemption does not count), median of `rounds`, and checks every kernel against
// the scalar reference on the first rows.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/dot_kernels.h"
#include "support/bench_util.h"

using namespace ember;
using namespace ember::kernels;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MiB [n_in] [rounds] [types...]\n", argv[0]);
    return 2;
  }
  const size_t bytes = static_cast<size_t>(std::atoll(argv[1])) << 20;
  const int64_t n_in = argc > 2 ? std::atoll(argv[2]) : 1536;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 9;
  std::vector<std::string> names;
  for (int i = 4; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) names = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n_in));
  for (float& f : x) f = nd(rng);
  constexpr size_t kAlign = size_t{2} << 20;
  for (const std::string& name : names) {
    const GgmlType type = *GgmlTypeFromName(name);
    const size_t rb = RowBytes(type, static_cast<uint64_t>(n_in));
    const int64_t rows = static_cast<int64_t>(bytes / rb);
    void* map = mmap(nullptr, rows * rb + kAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    auto* w = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(map) + kAlign - 1) & ~(kAlign - 1));
    madvise(w, rows * rb, MADV_HUGEPAGE);
    std::vector<float> seed(static_cast<size_t>(n_in * 16));
    for (float& f : seed) f = nd(rng);
    for (int r = 0; r < 16; ++r) (void)Quantize(type, &seed[r * n_in], w + r * rb, static_cast<size_t>(n_in));
    for (int64_t o = 16; o < rows; ++o) std::memcpy(w + o * rb, w + (o % 16) * rb, rb);
    ActBatch acts;
    acts.Convert(DotTypeOf(type), x.data(), 1, n_in);
    const ActRow row = acts.Row(0);
    const DotFn fns[] = {Avx2DotFn(type), Avx512DotFn(type)};
    const char* tiers[] = {"avx2", "avx512"};
    for (int k = 0; k < 2; ++k) {
      for (int64_t o = 0; fns[k] != nullptr && o < 16; ++o) {
        float got, want;
        fns[k](w + o * rb, n_in, &row, 1, &got, 1);
        ReferenceDotFn(type)(w + o * rb, n_in, &row, 1, &want, 1);
        if (std::memcmp(&got, &want, 4) != 0) std::printf("%s %s row %lld differs from the reference\n", name.c_str(), tiers[k], static_cast<long long>(o));
      }
    }
    std::vector<float> y(static_cast<size_t>(rows));
    std::vector<double> gbs[2];
    const int reps = bytes < (size_t{4} << 20) ? 200 : 1;
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < 2; ++k) {
        if (fns[k] == nullptr) continue;
        const double c0 = testing::ThreadCpuSeconds();
        for (int rep = 0; rep < reps; ++rep) {
          for (int64_t o = 0; o < rows; ++o) fns[k](w + o * rb, n_in, &row, 1, &y[static_cast<size_t>(o)], 1);
        }
        gbs[k].push_back(static_cast<double>(rows * rb) * reps / (testing::ThreadCpuSeconds() - c0) / 1e9);
      }
    }
    for (int k = 0; k < 2; ++k) {
      if (gbs[k].empty()) continue;
      const auto [lo, hi] = std::minmax_element(gbs[k].begin(), gbs[k].end());
      std::printf("%-5s %-6s n_in=%lld %5zu MiB: median %5.1f GB/s (min %5.1f max %5.1f)\n", name.c_str(), tiers[k],
                  static_cast<long long>(n_in), bytes >> 20, testing::Median(gbs[k]), *lo, *hi);
    }
    munmap(map, rows * rb + kAlign);
  }
  return 0;
}
