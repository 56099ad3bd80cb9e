// Micro-benchmark for the matmul kernels (not part of the test suite). Build by hand (one line):
//   g++ -std=c++20 -O3 -march=native -I src tests/kernels/bench/kernels_bench.cc
//     build/libember_kernels.a build/libember_format.a build/libember_util.a
//     -lxxhash -lpthread -o /tmp/kernels_bench
// Usage: kernels_bench [threads] [n_tok] [decode MiB of weights] [types...]
// A small MiB (e.g. 2: L2/L3-resident) shows the compute ceiling; 128 shows DRAM streaming.
//        kernels_bench --prefill [threads] [n_tok] [rounds] [types...]
// Prefill: the 0.6 B llama's shapes (1536->1536, 1536->512, 1536->4096, 4096->1536), MatMul with the
// row kernels only vs with the AVX2 GEMM kernels vs with the VNNI GEMM kernels (where the CPU has
// them; else the AVX2 ones again) vs with packed weights and the zmm kernels (kernels/repack.h; where
// the CPU and type have them, else the previous path again), interleaved in one process (the machine
// may be shared), median of `rounds`; prints ms, GMAC/s and the speed-ups over the row path per shape
// and for the whole layer.
//        kernels_bench --attention [threads] [ctx] [rounds] [chunk] [f16|f32] [tile tokens] [avx2|avx512]
// Attention: one layer of the 0.6 B llama (12 heads, 4 kv heads, head_dim 128, KV blocks of 32) for the
// prefill chunk of `chunk` tokens that ends at position ctx, tiled and scheduled as model/attention.cc
// does; the AVX2 kernels vs the AVX-512 ones (SetAttentionAvx512Enabled), interleaved, median; checks
// that both give the same bits.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/quant.h"
#include "kernels/attention_head.h"
#include "kernels/matmul.h"
#include "kernels/packed_weights.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

using namespace ember;
using namespace ember::kernels;

namespace {

// Wall time of fn(), or with one thread the owner thread's CPU time (on a shared machine that is
// what the call would take on an idle core; preemption does not count).
template <typename Fn>
double TimeIt(int threads, Fn fn) {
  timespec c0, c1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  return threads == 1 ? (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec) : wall;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Prefill(int argc, char** argv) {
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int64_t n_tok = argc > 3 ? std::atoll(argv[3]) : 512;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 7;
  std::vector<std::string> names;
  for (int i = 5; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) names = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
  struct Shape { int64_t n_in, n_out, per_layer; };  // per_layer: how many such matmuls a layer runs
  const Shape shapes[] = {{1536, 1536, 2}, {1536, 512, 2}, {1536, 4096, 2}, {4096, 1536, 1}};
  ThreadPool pool(threads);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::printf("threads=%d n_tok=%lld rounds=%d backend=%s (row kernels) + avx2 gemm + vnni gemm, %s\n", threads,
              static_cast<long long>(n_tok), rounds, MatMulBackendName(),
              threads == 1 ? "thread CPU time" : "wall time");
  for (const auto& name : names) {
    const GgmlType type = *GgmlTypeFromName(name);
    double layer[4] = {0, 0, 0, 0}, layer_mac = 0;
    for (const Shape& sh : shapes) {
      const size_t rb = RowBytes(type, sh.n_in);
      std::vector<uint8_t> w(rb * sh.n_out);
      std::vector<float> row(sh.n_in);
      for (int64_t o = 0; o < sh.n_out; ++o) {
        for (auto& f : row) f = nd(rng);
        (void)Quantize(type, row.data(), &w[o * rb], sh.n_in);
      }
      std::vector<float> x(sh.n_in * n_tok);
      for (auto& f : x) f = nd(rng);
      const WeightView v{type, w.data(), sh.n_in, sh.n_out, rb};
      WeightView vp = v;
      WeightView* pv[] = {&vp};
      StatusOr<PackedWeights> packed = PackedWeights::Pack(pv, pool);
      if (!packed.ok()) {
        std::printf("%s\n", packed.status().ToString().c_str());
        return 1;
      }
      std::vector<float> y[4];
      std::vector<double> ts[4];
      for (auto& yy : y) yy.resize(sh.n_out * n_tok);
      for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
        for (int path = 0; path < 4; ++path) {
          SetGemmEnabled(path > 0);
          SetGemmVnniEnabled(path > 1);
          const WeightView& view = path == 3 ? vp : v;
          const double t = TimeIt(threads, [&] { MatMul(view, x.data(), n_tok, y[path].data(), pool); });
          if (r > 0) ts[path].push_back(t);
        }
      }
      SetGemmEnabled(true);
      SetGemmVnniEnabled(true);
      for (int path = 1; path < 4; ++path) {
        if (std::memcmp(y[0].data(), y[path].data(), y[0].size() * sizeof(float)) != 0) {
          std::printf("%s %lldx%lld: path %d and row results differ!\n", name.c_str(), static_cast<long long>(sh.n_in),
                      static_cast<long long>(sh.n_out), path);
          return 1;
        }
      }
      const double mac = 1.0 * sh.n_in * sh.n_out * n_tok;
      double m[4];
      for (int path = 0; path < 4; ++path) {
        m[path] = Median(ts[path]);
        layer[path] += sh.per_layer * m[path];
      }
      layer_mac += sh.per_layer * mac;
      std::printf("%-5s %4lld->%-4lld row %6.1f GMAC/s | avx2 gemm %6.1f x%.2f | vnni gemm %6.1f x%.2f | packed %6.1f x%.2f (%s)\n",
                  name.c_str(), static_cast<long long>(sh.n_in), static_cast<long long>(sh.n_out), mac / m[0] / 1e9,
                  mac / m[1] / 1e9, m[0] / m[1], mac / m[2] / 1e9, m[0] / m[2], mac / m[3] / 1e9, m[0] / m[3],
                  vp.packed != nullptr ? "zmm" : "not packed");
    }
    std::printf("%-5s layer      row %6.1f GMAC/s | avx2 gemm %6.1f x%.2f | vnni gemm %6.1f x%.2f | packed %6.1f x%.2f (packed/vnni x%.2f) %.1f ms\n",
                name.c_str(), layer_mac / layer[0] / 1e9, layer_mac / layer[1] / 1e9, layer[0] / layer[1],
                layer_mac / layer[2] / 1e9, layer[0] / layer[2], layer_mac / layer[3] / 1e9, layer[0] / layer[3],
                layer[2] / layer[3], layer[3] * 1e3);
  }
  return 0;
}


// One kv head's blocks of keys and values for positions [0, ctx).
struct BenchKv {
  int64_t bs, dim;
  bool f16;
  std::vector<std::vector<uint8_t>> k, v;  // [kv head * blocks + b]
  int64_t blocks;
};
struct BenchHead {
  const BenchKv* kv;
  int kvh;
};
const uint8_t* BenchBlock(const void* ctx, bool v, int64_t b) {
  const BenchHead& h = *static_cast<const BenchHead*>(ctx);
  return (v ? h.kv->v : h.kv->k)[static_cast<size_t>(h.kvh * h.kv->blocks + b)].data();
}

int Attention(int argc, char** argv) {
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int64_t ctx = argc > 3 ? std::atoll(argv[3]) : 2048;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const int64_t chunk = std::min<int64_t>(ctx, argc > 5 ? std::atoll(argv[5]) : 512);
  const bool f16 = !(argc > 6 && std::string(argv[6]) == "f32");
  const int64_t tile_tokens = argc > 7 ? std::atoll(argv[7]) : 0;  // 0: model/attention.cc's choice
  const int n_head = 12, n_kv = 4, hd = 128, group = n_head / n_kv;
  const int64_t bs = 32, blocks = (ctx + bs - 1) / bs;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  BenchKv kv{bs, hd, f16, {}, {}, blocks};
  std::vector<float> row(static_cast<size_t>(bs * hd));
  std::vector<uint16_t> row16(row.size());
  for (int64_t i = 0; i < n_kv * blocks * 2; ++i) {
    for (auto& f : row) f = nd(rng);
    std::vector<uint8_t> bytes(row.size() * (f16 ? 2 : 4));
    if (f16) {
      RoundToF16(row.data(), row16.data(), static_cast<int>(row.size()));
      std::memcpy(bytes.data(), row16.data(), bytes.size());
    } else {
      std::memcpy(bytes.data(), row.data(), bytes.size());
    }
    (i % 2 ? kv.v : kv.k).push_back(std::move(bytes));
  }
  std::vector<float> q(static_cast<size_t>(chunk * n_head * hd));
  for (auto& f : q) f = nd(rng);
  // model/attention.cc's tiling: (token tile, kv head) items, costliest first, claimed one at a time.
  const int64_t tile = tile_tokens > 0 ? tile_tokens : AttnTileTokens(group, ctx);
  struct Item { int64_t t0, t1; int kvh; };
  std::vector<Item> items;
  for (int64_t t0 = chunk; t0 > 0; t0 -= tile) {
    for (int h = 0; h < n_kv; ++h) items.push_back({std::max<int64_t>(0, t0 - tile), t0, h});
  }
  ThreadPool pool(threads);
  const int64_t slots = tile * group;
  std::vector<float> scores(static_cast<size_t>(threads * slots * ctx));
  std::vector<uint16_t> half(static_cast<size_t>(threads * slots * hd));
  std::vector<AttnQuery> qs(static_cast<size_t>(threads * slots));
  auto run = [&](std::vector<float>& out) {
    pool.ParallelForChunks(static_cast<int64_t>(items.size()), 1, [&](int64_t b, int64_t e, int thread) {
      for (int64_t i = b; i < e; ++i) {
        const Item& it = items[static_cast<size_t>(i)];
        const BenchHead head_ctx{&kv, it.kvh};
        AttnKvHead head{hd, hd, bs, f16, &head_ctx, BenchBlock};
        AttnQuery* tq = qs.data() + thread * slots;
        int nq = 0;
        for (int64_t t = it.t0; t < it.t1; ++t) {
          for (int h = it.kvh * group; h < (it.kvh + 1) * group; ++h, ++nq) {
            const int64_t p = ctx - chunk + t;
            tq[nq] = {q.data() + (t * n_head + h) * hd, 0, p + 1, scores.data() + (thread * slots + nq) * ctx,
                      half.data() + (thread * slots + nq) * hd, out.data() + (t * n_head + h) * hd};
          }
        }
        AttendHeads(head, tq, nq, 1.0f / std::sqrt(static_cast<float>(hd)));
      }
    });
  };
  std::vector<float> out2(q.size()), out5(q.size());
  std::vector<double> t2, t5;
  const std::string only = argc > 8 ? argv[8] : "";  // "avx2" or "avx512": time one path (profiling)
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
    SetAttentionAvx512Enabled(false);
    const double a = only == "avx512" ? 1 : TimeIt(threads, [&] { run(out2); });
    SetAttentionAvx512Enabled(true);
    const double b = only == "avx2" ? 1 : TimeIt(threads, [&] { run(out5); });
    if (r > 0) { t2.push_back(a); t5.push_back(b); }
  }
  if (only.empty() && std::memcmp(out2.data(), out5.data(), out2.size() * sizeof(float)) != 0) {
    std::printf("attention: AVX2 and AVX-512 results differ!\n");
    return 1;
  }
  double pairs = 0;  // (query, key) pairs: each costs hd + hd FMAs
  for (int64_t t = 0; t < chunk; ++t) pairs += static_cast<double>(ctx - chunk + t + 1) * n_head;
  const double m2 = Median(t2), m5 = Median(t5), flop = pairs * 2.0 * (2 * hd);
  std::printf("attention %s ctx=%lld chunk=%lld tile=%lld tokens threads=%d (%s): avx2 %8.2f ms %6.1f GFLOP/s | "
              "avx512 %8.2f ms %6.1f GFLOP/s | x%.2f\n",
              f16 ? "F16" : "F32", static_cast<long long>(ctx), static_cast<long long>(chunk),
              static_cast<long long>(tile), threads, threads == 1 ? "thread CPU time" : "wall", m2 * 1e3,
              flop / m2 / 1e9, m5 * 1e3, flop / m5 / 1e9, m2 / m5);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--prefill") return Prefill(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--attention") return Attention(argc, argv);
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
