// Micro-benchmark: the K-quant GEMM kernels against the row-dot kernels they replace in prefill, in
// one process, interleaved (the machine is shared, so only the per-round ratio means much). Not part
// of the test suite. Build by hand (after building ember_kernels):
//   g++ -std=c++20 -O2 -I src tests/kernels/bench/gemm_kquant_bench.cc build/libember_kernels.a
//     build/libember_format.a build/libember_util.a -lxxhash -lpthread -o /tmp/gemm_kquant_bench
// Usage: gemm_kquant_bench [threads=2] [n_tok=512] [rounds=7] [types...=q4_k q6_k q5_k]
// Both paths split rows over the pool as MatMul does and share one activation conversion (not timed).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/act_quant.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_kernels.h"
#include "kernels/thread_pool.h"

using namespace ember;
using namespace ember::kernels;

namespace {

struct Shape { int64_t n_in, n_out; };

// MatMul's row loop with the row kernel only (the path before the GEMM kernels).
void RowsDot(DotFn fn, const uint8_t* w, size_t rb, int64_t n_in, int64_t n_out, const ActBatch& acts,
             int64_t n_tok, int64_t o0, int64_t o1, float* y) {
  ActRow tile[kMaxTile];
  for (int64_t ob = o0; ob < o1; ob += 16) {
    const int64_t oe = std::min(o1, ob + 16);
    for (int64_t t = 0; t < n_tok; t += kMaxTile) {
      const int n = static_cast<int>(std::min<int64_t>(kMaxTile, n_tok - t));
      for (int j = 0; j < n; ++j) tile[j] = acts.Row(t + j);
      for (int64_t o = ob; o < oe; ++o) fn(w + o * rb, n_in, tile, n, y + t * n_out + o, n_out);
    }
  }
}

// MatMul's row loop with the GEMM kernel (rows a multiple of 8 here).
void RowsGemm(GemmFn fn, const uint8_t* w, size_t rb, int64_t n_in, int64_t n_out, const ActBatch& acts,
              int64_t n_tok, int64_t o0, int64_t o1, float* y) {
  ActRow tile[kGemmMaxTile];
  for (; o0 + kGemmRows <= o1; o0 += kGemmRows) {
    for (int64_t t = 0; t < n_tok; t += kGemmMaxTile) {
      const int n = static_cast<int>(std::min<int64_t>(kGemmMaxTile, n_tok - t));
      for (int j = 0; j < n; ++j) tile[j] = acts.Row(t + j);
      fn(w + o0 * rb, rb, n_in, tile, n, y + t * n_out + o0, n_out);
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t n_tok = argc > 2 ? std::atoll(argv[2]) : 512;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 7;
  std::vector<std::string> names;
  for (int i = 4; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) names = {"q4_k", "q6_k", "q5_k"};
  const Shape shapes[] = {{1536, 1536}, {1536, 512}, {1536, 4096}, {4096, 1536}};
  ThreadPool pool(threads);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (const auto& name : names) {
    const GgmlType type = *GgmlTypeFromName(name);
    const DotFn dot = SelectDotFn(type, KernelTier::kAvx512);
    const GemmFn gemm = Avx2GemmFn(type);
    if (gemm == nullptr) { std::printf("%s: no GEMM kernel\n", name.c_str()); continue; }
    double sum_dot = 0, sum_gemm = 0;
    for (const Shape& s : shapes) {
      const size_t rb = RowBytes(type, s.n_in);
      std::vector<float> f(s.n_in);
      std::vector<uint8_t> w(rb * s.n_out);
      for (int64_t o = 0; o < s.n_out; ++o) {
        for (auto& v : f) v = nd(rng);
        (void)Quantize(type, f.data(), &w[o * rb], s.n_in);
      }
      std::vector<float> x(s.n_in * n_tok);
      for (auto& v : x) v = nd(rng);
      ActBatch acts;
      acts.Convert(DotTypeOf(type), x.data(), n_tok, s.n_in);
      std::vector<float> y1(s.n_out * n_tok), y2(y1.size());
      const int64_t chunk = (s.n_out + 8 * threads - 1) / (8 * threads) / 16 * 16 + 16;
      auto run_dot = [&] {
        pool.ParallelForChunks(s.n_out, chunk, [&](int64_t a, int64_t b, int) {
          RowsDot(dot, w.data(), rb, s.n_in, s.n_out, acts, n_tok, a, b, y1.data());
        });
      };
      auto run_gemm = [&] {
        pool.ParallelForChunks(s.n_out, chunk, [&](int64_t a, int64_t b, int) {
          RowsGemm(gemm, w.data(), rb, s.n_in, s.n_out, acts, n_tok, a, b, y2.data());
        });
      };
      // With one thread, the thread's CPU time: what the kernel takes on a core it is not sharing.
      auto time = [&](auto&& fn) {
        timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        if (threads == 1) return (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      };
      run_dot();
      run_gemm();
      const bool same = std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0;
      std::vector<double> td, tg, ratio;
      for (int r = 0; r < rounds; ++r) {
        const double a = time(run_dot), b = time(run_gemm);
        td.push_back(a);
        tg.push_back(b);
        ratio.push_back(a / b);
      }
      const double macs = static_cast<double>(s.n_in) * s.n_out * n_tok;
      const double md = Median(td), mg = Median(tg);
      sum_dot += md;
      sum_gemm += mg;
      std::printf("%-5s %5lld->%-5lld n_tok=%lld threads=%d  row %7.2f ms %6.1f GMAC/s | gemm %7.2f ms %6.1f GMAC/s | "
                  "speed-up median %.2fx (min %.2f max %.2f) %s\n",
                  name.c_str(), static_cast<long long>(s.n_in), static_cast<long long>(s.n_out),
                  static_cast<long long>(n_tok), threads, md * 1e3, macs / md / 1e9, mg * 1e3, macs / mg / 1e9,
                  Median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()), same ? "bitwise-equal" : "MISMATCH");
    }
    std::printf("%-5s all four shapes: row %.2f ms, gemm %.2f ms, %.2fx\n", name.c_str(), sum_dot * 1e3,
                sum_gemm * 1e3, sum_dot / sum_gemm);
  }
  return 0;
}
