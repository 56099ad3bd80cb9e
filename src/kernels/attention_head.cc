#include "kernels/attention_head.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/attention_avx512.h"
#include "kernels/avx2_util.h"
#include "kernels/cpu_features.h"
#include "kernels/ops.h"
#include "kernels/ops_internal.h"
#include "util/half.h"

namespace ember::kernels {
namespace {

// ---- AVX2: the same FMA sequence as ops_avx2.cc's Dot<> / Axpy*, with the loop over keys inside ----
struct LoadH {
  EMBER_AVX2 static __m256 Load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct LoadF {
  EMBER_AVX2 static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
};

// Dot<A, B> of ops_avx2.cc for hd % 32 == 0 (no padded tail): acc[k] = fma(k[c+8k], q[c+8k], acc[k]),
// then v = (acc0 + acc1) + (acc2 + acc3). Two keys at a time for independent FMA chains; each key's
// own sequence is unchanged. q is f32 (the f16 query already widened exactly).
template <class L, class T>
EMBER_AVX2 inline void Dot2(const T* k0, const T* k1, const float* q, int hd, __m256& va, __m256& vb) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
  for (int c = 0; c < hd; c += 32) {
    const __m256 q0 = _mm256_loadu_ps(q + c), q1 = _mm256_loadu_ps(q + c + 8);
    const __m256 q2 = _mm256_loadu_ps(q + c + 16), q3 = _mm256_loadu_ps(q + c + 24);
    a0 = _mm256_fmadd_ps(L::Load(k0 + c), q0, a0);
    b0 = _mm256_fmadd_ps(L::Load(k1 + c), q0, b0);
    a1 = _mm256_fmadd_ps(L::Load(k0 + c + 8), q1, a1);
    b1 = _mm256_fmadd_ps(L::Load(k1 + c + 8), q1, b1);
    a2 = _mm256_fmadd_ps(L::Load(k0 + c + 16), q2, a2);
    b2 = _mm256_fmadd_ps(L::Load(k1 + c + 16), q2, b2);
    a3 = _mm256_fmadd_ps(L::Load(k0 + c + 24), q3, a3);
    b3 = _mm256_fmadd_ps(L::Load(k1 + c + 24), q3, b3);
  }
  va = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  vb = _mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3));
}

// Hsum (avx2_util.h) of two keys' v at once, the same additions with the same operands first:
// s = lo + hi per key -> [a: s0 s1 s2 s3 | b: s0 s1 s2 s3].
EMBER_AVX2 inline __m256 HalfSums(__m256 a, __m256 b) {
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

template <class L, class T>
EMBER_AVX2 inline void ScoresAvx2(const T* k, const float* q, int hd, int64_t n, float scale, float* sc) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {  // 8 keys, reduced together (Hsum's tree per key, transposed)
    const T* kj = k + j * hd;
    __m256 va, vb, vc, vd;
    Dot2<L>(kj, kj + hd, q, hd, va, vb);
    Dot2<L>(kj + 2 * hd, kj + 3 * hd, q, hd, vc, vd);
    const __m256 s_ab = HalfSums(va, vb), s_cd = HalfSums(vc, vd);
    // t = s + movehl(s): t0 = s0 + s2, t1 = s1 + s3 -> [a t0 t1 c t0 t1 | b t0 t1 d t0 t1]
    const __m256 t_abcd = _mm256_add_ps(_mm256_shuffle_ps(s_ab, s_cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm256_shuffle_ps(s_ab, s_cd, _MM_SHUFFLE(3, 2, 3, 2)));
    Dot2<L>(kj + 4 * hd, kj + 5 * hd, q, hd, va, vb);
    Dot2<L>(kj + 6 * hd, kj + 7 * hd, q, hd, vc, vd);
    const __m256 s_ef = HalfSums(va, vb), s_gh = HalfSums(vc, vd);
    const __m256 t_efgh = _mm256_add_ps(_mm256_shuffle_ps(s_ef, s_gh, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm256_shuffle_ps(s_ef, s_gh, _MM_SHUFFLE(3, 2, 3, 2)));
    // t0 + t1 -> [a c e g | b d f h], then back to key order
    const __m256 sum = _mm256_add_ps(_mm256_shuffle_ps(t_abcd, t_efgh, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm256_shuffle_ps(t_abcd, t_efgh, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm256_storeu_ps(sc + j, _mm256_mul_ps(_mm256_permutevar8x32_ps(sum, order), vscale));
  }
  for (; j + 2 <= n; j += 2) {
    __m256 va, vb;
    Dot2<L>(k + j * hd, k + (j + 1) * hd, q, hd, va, vb);
    sc[j] = avx2::Hsum(va) * scale;
    sc[j + 1] = avx2::Hsum(vb) * scale;
  }
  for (; j < n; ++j) {
    const T* k0 = k + j * hd;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int c = 0; c < hd; c += 32) {
      a0 = _mm256_fmadd_ps(L::Load(k0 + c), _mm256_loadu_ps(q + c), a0);
      a1 = _mm256_fmadd_ps(L::Load(k0 + c + 8), _mm256_loadu_ps(q + c + 8), a1);
      a2 = _mm256_fmadd_ps(L::Load(k0 + c + 16), _mm256_loadu_ps(q + c + 16), a2);
      a3 = _mm256_fmadd_ps(L::Load(k0 + c + 24), _mm256_loadu_ps(q + c + 24), a3);
    }
    sc[j] = avx2::Hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) * scale;
  }
}

// M output vectors (8 floats each) held in registers across all n keys: acc = fma(p_j, v_j, acc), the
// operand order of AxpyF16/AxpyF32's vector loop. Columns are independent, so splitting the row into
// column groups changes no element's sequence.
template <int M, class L, class T>
EMBER_AVX2 inline void AccumCols(const float* p, const T* v, int hv, int64_t n, float* out) {
  __m256 acc[M];
  for (int i = 0; i < M; ++i) acc[i] = _mm256_loadu_ps(out + 8 * i);
  for (int64_t j = 0; j < n; ++j) {
    const __m256 pa = _mm256_set1_ps(p[j]);
    const T* vj = v + j * hv;
    for (int i = 0; i < M; ++i) acc[i] = _mm256_fmadd_ps(pa, L::Load(vj + 8 * i), acc[i]);
  }
  for (int i = 0; i < M; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
}

// AccumCols for two queries over the same keys: each v_j vector is loaded (and, for an F16 cache,
// widened) once and used by both. Per query and column the sequence is AccumCols' exactly.
template <int M, class L, class T>
EMBER_AVX2 inline void AccumCols2(const float* pa, const float* pb, const T* v, int hv, int64_t n, float* oa,
                                  float* ob) {
  __m256 acc_a[M], acc_b[M];
  for (int i = 0; i < M; ++i) {
    acc_a[i] = _mm256_loadu_ps(oa + 8 * i);
    acc_b[i] = _mm256_loadu_ps(ob + 8 * i);
  }
  for (int64_t j = 0; j < n; ++j) {
    const __m256 wa = _mm256_set1_ps(pa[j]), wb = _mm256_set1_ps(pb[j]);
    const T* vj = v + j * hv;
    for (int i = 0; i < M; ++i) {
      const __m256 x = L::Load(vj + 8 * i);
      acc_a[i] = _mm256_fmadd_ps(wa, x, acc_a[i]);
      acc_b[i] = _mm256_fmadd_ps(wb, x, acc_b[i]);
    }
  }
  for (int i = 0; i < M; ++i) {
    _mm256_storeu_ps(oa + 8 * i, acc_a[i]);
    _mm256_storeu_ps(ob + 8 * i, acc_b[i]);
  }
}

template <class L, class T>
EMBER_AVX2 inline void Accum2Avx2(const float* pa, const float* pb, const T* v, int hv, int64_t n, float* oa,
                                  float* ob) {  // hv % 8 == 0; 2 x 6 accumulators + 2 weights + 1 load
  for (int col = 0; col < hv; col += 48) {
    switch (std::min(6, (hv - col) / 8)) {
      case 6: AccumCols2<6, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
      case 5: AccumCols2<5, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
      case 4: AccumCols2<4, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
      case 3: AccumCols2<3, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
      case 2: AccumCols2<2, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
      default: AccumCols2<1, L>(pa, pb, v + col, hv, n, oa + col, ob + col); break;
    }
  }
}

template <class L, class T>
EMBER_AVX2 inline void AccumAvx2(const float* p, const T* v, int hv, int64_t n, float* out) {  // hv % 8 == 0
  for (int col = 0; col < hv; col += 64) {
    switch (std::min(8, (hv - col) / 8)) {
      case 8: AccumCols<8, L>(p, v + col, hv, n, out + col); break;
      case 7: AccumCols<7, L>(p, v + col, hv, n, out + col); break;
      case 6: AccumCols<6, L>(p, v + col, hv, n, out + col); break;
      case 5: AccumCols<5, L>(p, v + col, hv, n, out + col); break;
      case 4: AccumCols<4, L>(p, v + col, hv, n, out + col); break;
      case 3: AccumCols<3, L>(p, v + col, hv, n, out + col); break;
      case 2: AccumCols<2, L>(p, v + col, hv, n, out + col); break;
      default: AccumCols<1, L>(p, v + col, hv, n, out + col); break;
    }
  }
}

EMBER_AVX2 void ScoresF16Avx2(const uint16_t* k, const float* qf, int hd, int64_t n, float scale, float* sc) {
  ScoresAvx2<LoadH>(k, qf, hd, n, scale, sc);
}
EMBER_AVX2 void ScoresF32Avx2(const float* k, const float* q, int hd, int64_t n, float scale, float* sc) {
  ScoresAvx2<LoadF>(k, q, hd, n, scale, sc);
}
EMBER_AVX2 void AccumF16Avx2(const float* p, const uint16_t* v, int hv, int64_t n, float* out) {
  AccumAvx2<LoadH>(p, v, hv, n, out);
}
EMBER_AVX2 void AccumF32Avx2(const float* p, const float* v, int hv, int64_t n, float* out) {
  AccumAvx2<LoadF>(p, v, hv, n, out);
}
EMBER_AVX2 void Accum2F16Avx2(const float* pa, const float* pb, const uint16_t* v, int hv, int64_t n, float* oa,
                              float* ob) {
  Accum2Avx2<LoadH>(pa, pb, v, hv, n, oa, ob);
}
EMBER_AVX2 void Accum2F32Avx2(const float* pa, const float* pb, const float* v, int hv, int64_t n, float* oa,
                              float* ob) {
  Accum2Avx2<LoadF>(pa, pb, v, hv, n, oa, ob);
}
EMBER_AVX2 void WidenF16Avx2(const uint16_t* h, float* f, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(f + i, LoadH::Load(h + i));
  for (; i < n; ++i) f[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[i])));
}

// f[i] = f32(h[i]) (exact; the hardware and Fp16ToF32 agree on every value, NaNs stay NaN).
void WidenF16(const uint16_t* h, float* f, int64_t n) {
  if (CpuHasAvx2()) {
    for (int64_t i = 0; i < n; i += 1 << 20) WidenF16Avx2(h + i, f + i, static_cast<int>(std::min<int64_t>(n - i, 1 << 20)));
  } else {
    for (int64_t i = 0; i < n; ++i) f[i] = Fp16ToF32(h[i]);
  }
}

}  // namespace

void AttnPrepareQueryF16(const float* q, int hd, uint16_t* q16, float* qf) {
  RoundToF16(q, q16, hd);
  WidenF16(q16, qf, hd);  // the conversion Dot<H, H> does per key
}

void AttnScoresF16(const uint16_t* k, const uint16_t* q16, const float* qf, int hd, int64_t n, float scale,
                   float* sc) {
  if (CpuHasAvx2() && hd % 32 == 0) return ScoresF16Avx2(k, qf, hd, n, scale, sc);
  for (int64_t j = 0; j < n; ++j) sc[j] = DotF16F16(k + j * hd, q16, hd) * scale;
}

void AttnScoresF32(const float* k, const float* q, int hd, int64_t n, float scale, float* sc) {
  if (CpuHasAvx2() && hd % 32 == 0) return ScoresF32Avx2(k, q, hd, n, scale, sc);
  for (int64_t j = 0; j < n; ++j) sc[j] = DotF32(k + j * hd, q, hd) * scale;
}

void AttnAccumF16(const float* p, const uint16_t* v, int hv, int64_t n, float* out) {
  if (CpuHasAvx2() && hv % 8 == 0) return AccumF16Avx2(p, v, hv, n, out);
  for (int64_t j = 0; j < n; ++j) AxpyF16(p[j], v + j * hv, out, hv);
}

void AttnAccumF32(const float* p, const float* v, int hv, int64_t n, float* out) {
  if (CpuHasAvx2() && hv % 8 == 0) return AccumF32Avx2(p, v, hv, n, out);
  for (int64_t j = 0; j < n; ++j) AxpyF32(p[j], v + j * hv, out, hv);
}

void AttendHead(const AttnKvHead& kv, const float* q, int64_t k0, int64_t n_keys, float scale, float* scores,
                uint16_t* half, float* out) {
  const AttnQuery query{q, k0, n_keys, scores, half, out};
  AttendHeads(kv, &query, 1, scale);
}

namespace {

// The keys of block b that query qu sees, as rows [j0, j1) of the block; false if none.
bool BlockRows(const AttnQuery& qu, int64_t b, int64_t bs, int64_t* j0, int64_t* j1) {
  if (b * bs >= qu.n_keys || (b + 1) * bs <= qu.k0) return false;
  *j0 = std::max(qu.k0, b * bs) - b * bs;
  *j1 = std::min(bs, qu.n_keys - b * bs);
  return true;
}

// Up to kAttnMaxGroup queries that see one block from the same first row j0, each to its own j1.
struct RowRun {
  int n = 0;
  int q[kAttnMaxGroup];
  int64_t j0 = 0;
  int64_t j1[kAttnMaxGroup];
  int64_t Common() const { return *std::min_element(j1, j1 + n); }  // rows all of them see
};

// fn(run) for the queries that see block b, in order, as runs of up to max_len consecutive ones with
// the same first row (in a prefill tile: the whole tile on a block before the diagonal).
template <class Fn>
void ForEachRun(const AttnQuery* qs, int nq, int64_t b, int64_t bs, int max_len, Fn&& fn) {
  RowRun run;
  for (int i = 0; i < nq; ++i) {
    int64_t j0, j1;
    if (!BlockRows(qs[i], b, bs, &j0, &j1)) continue;
    if (run.n > 0 && (run.j0 != j0 || run.n == max_len)) {
      fn(run);
      run.n = 0;
    }
    run.j0 = j0;
    run.q[run.n] = i;
    run.j1[run.n++] = j1;
  }
  if (run.n > 0) fn(run);
}

// One AttendHeads call: per KV block the scores of every query that sees it, then each query's
// softmax, then per block Σ p·v. Per query these are exactly AttendHead's operations in its order.
class HeadTile {
 public:
  HeadTile(const AttnKvHead& kv, const AttnQuery* qs, int nq, float scale);
  void Compute();

 private:
  void ScoresBlock(int64_t b);
  void ValuesBlock(int64_t b);
  void ValuesBlockAvx2(int64_t b, bool wide, const uint8_t* vh);
  // Block b's K (v = false) or V data as the kernels read it: the stored bytes, and f32 rows (the
  // block widened into kvf_ when it is F16 and two or more queries see it; the stored rows of an F32
  // cache; null for an F16 block read as stored). users: how many queries see the block.
  struct Block {
    const uint8_t* data;
    const float* rows;
    bool wide;
    int users;
  };
  Block Load(bool v, int64_t b);
  // Software prefetch of block b (K or V) spread over `steps` calls of PrefetchStep and the rest at
  // PrefetchRest: blocks are separate allocations, so the hardware prefetcher loses the stream at
  // each boundary, and a whole block requested at once fills the line-fill buffers and stalls.
  void PrefetchStart(bool v, int64_t b, int steps);
  void PrefetchStep();
  void PrefetchRest();
  const float* Query(int i) const {  // the f32 query the kernels read (f16-rounded for an F16 cache)
    return kv_.f16 ? qf_ + static_cast<size_t>(i) * hd_ : qs_[i].q;
  }
  float* Scores(int i, int64_t b, int64_t j) const { return qs_[i].scores + (b * bs_ - qs_[i].k0) + j; }

  const AttnKvHead& kv_;
  const AttnQuery* qs_;
  const int nq_, hd_, hv_;
  const int64_t bs_;
  const float scale_;
  const bool avx2_, zmm_;
  // The AVX2 kernels read an F16 row as f32(k) exactly, so widening a block once into f32 and running
  // the F32 kernel on it is the same arithmetic; with two or more queries on a block that pays the
  // conversion once per tile instead of once per query (and per GQA head).
  const bool widen_k_, widen_v_;
  float* qf_ = nullptr;   // [nq][hd]: q rounded to fp16 and widened once per query, not per key
  float* kvf_ = nullptr;  // one widened block, 64-byte aligned
  int64_t b_lo_ = INT64_MAX, b_end_ = 0;
  const uint8_t* pf_ = nullptr;  // next line to prefetch
  size_t pf_left_ = 0, pf_step_ = 0;  // bytes
};

HeadTile::HeadTile(const AttnKvHead& kv, const AttnQuery* qs, int nq, float scale)
    : kv_(kv), qs_(qs), nq_(nq), hd_(kv.head_dim_k), hv_(kv.head_dim_v), bs_(kv.block_size), scale_(scale),
      avx2_(CpuHasAvx2()), zmm_(AttnAvx512Active()),
      widen_k_(kv.f16 && avx2_ && hd_ % 32 == 0), widen_v_(kv.f16 && avx2_ && hv_ % 8 == 0) {
  thread_local std::vector<float> qf, kvf;  // reused across calls; an AttendHeads call runs on one thread
  if (widen_k_ || widen_v_) {
    kvf.resize(static_cast<size_t>(bs_) * static_cast<size_t>(std::max(hd_, hv_)) + 16);
    const uintptr_t misaligned = reinterpret_cast<uintptr_t>(kvf.data()) % 64;  // rows start on lines
    kvf_ = kvf.data() + (64 - misaligned) % 64 / sizeof(float);
  }
  if (kv.f16) {
    qf.resize(static_cast<size_t>(nq) * static_cast<size_t>(hd_));
    qf_ = qf.data();
    for (int i = 0; i < nq; ++i) AttnPrepareQueryF16(qs[i].q, hd_, qs[i].half, qf_ + static_cast<size_t>(i) * hd_);
  }
  for (int i = 0; i < nq; ++i) {  // the blocks any query touches
    if (qs[i].n_keys <= qs[i].k0) continue;
    b_lo_ = std::min(b_lo_, qs[i].k0 / bs_);
    b_end_ = std::max(b_end_, (qs[i].n_keys + bs_ - 1) / bs_);
  }
}

void HeadTile::Compute() {
  for (int64_t b = b_lo_; b < b_end_; ++b) ScoresBlock(b);  // scores = (k_j · q) * scale
  for (int i = 0; i < nq_; ++i) {
    const AttnQuery& qu = qs_[i];
    const int n = static_cast<int>(std::max<int64_t>(0, qu.n_keys - qu.k0));
    // With an F16 cache p = f32(fp16(p)): the weight AxpyF16 was given, Fp16ToF32(p16[j]).
    if (kv_.f16) {
      SoftmaxToF16Weights(qu.scores, n);
    } else {
      Softmax(qu.scores, n);
    }
    std::fill(qu.out, qu.out + hv_, 0.0f);
  }
  for (int64_t b = b_lo_; b < b_end_; ++b) ValuesBlock(b);  // out = Σ_j p_j v_j
}

void HeadTile::PrefetchStart(bool v, int64_t b, int steps) {
  pf_left_ = 0;
  if (b >= b_end_) return;
  pf_ = kv_.block(kv_.ctx, v, b);
  pf_left_ = static_cast<size_t>(bs_) * static_cast<size_t>(v ? hv_ : hd_) * (kv_.f16 ? 2 : 4);
  pf_step_ = (pf_left_ / 64 + steps) / (steps + 1) * 64;
  PrefetchStep();
}

void HeadTile::PrefetchStep() {
  const size_t n = std::min(pf_left_, pf_step_);
  for (size_t off = 0; off < n; off += 64) __builtin_prefetch(pf_ + off);
  pf_ += n;
  pf_left_ -= n;
}

void HeadTile::PrefetchRest() {
  pf_step_ = pf_left_;
  PrefetchStep();
}

HeadTile::Block HeadTile::Load(bool v, int64_t b) {
  Block blk{kv_.block(kv_.ctx, v, b), nullptr, false, 0};  // [bs][hd] keys or [bs][hv] values
  int64_t u0 = bs_, u1 = 0;  // the rows any query sees
  for (int i = 0; i < nq_; ++i) {
    int64_t j0, j1;
    if (!BlockRows(qs_[i], b, bs_, &j0, &j1)) continue;
    u0 = std::min(u0, j0);
    u1 = std::max(u1, j1);
    ++blk.users;
  }
  const int dim = v ? hv_ : hd_;
  if (kv_.f16 && (v ? widen_v_ : widen_k_) && blk.users >= 2) {
    WidenF16(reinterpret_cast<const uint16_t*>(blk.data) + u0 * dim, kvf_ + u0 * dim, (u1 - u0) * dim);
    blk.wide = true;
    blk.rows = kvf_;
  } else if (!kv_.f16) {
    blk.rows = reinterpret_cast<const float*>(blk.data);
  }
  return blk;
}

void HeadTile::ScoresBlock(int64_t b) {
  const Block blk = Load(false, b);
  const uint8_t* kh = blk.data;
  const float* rows = blk.rows;
  const int users = blk.users;
  const bool pairs = zmm_ && rows != nullptr && hd_ % 32 == 0 && hd_ <= 32 * kAttnMaxHead32;
  // The next K block, or after the last one the first V block.
  PrefetchStart(b + 1 == b_end_, b + 1 == b_end_ ? b_lo_ : b + 1, pairs ? (users + 1) / 2 : users);
  if (pairs) {
    // Two queries per zmm over their common rows; the rows past them one query at a time.
    ForEachRun(qs_, nq_, b, bs_, 2, [&](const RowRun& r) {
      PrefetchStep();
      const int64_t common = r.n == 2 ? r.Common() : r.j0;
      if (common > r.j0) {
        avx512_attn::Scores2(rows + r.j0 * hd_, hd_, common - r.j0, Query(r.q[0]), Query(r.q[1]), scale_,
                             Scores(r.q[0], b, r.j0), Scores(r.q[1], b, r.j0));
      }
      for (int m = 0; m < r.n; ++m) {
        if (r.j1[m] <= common) continue;
        AttnScoresF32(rows + common * hd_, Query(r.q[m]), hd_, r.j1[m] - common, scale_, Scores(r.q[m], b, common));
      }
    });
  } else {
    for (int i = 0; i < nq_; ++i) {
      int64_t j0, j1;
      if (!BlockRows(qs_[i], b, bs_, &j0, &j1)) continue;
      PrefetchStep();
      if (rows != nullptr) {
        AttnScoresF32(rows + j0 * hd_, Query(i), hd_, j1 - j0, scale_, Scores(i, b, j0));
      } else {
        AttnScoresF16(reinterpret_cast<const uint16_t*>(kh) + j0 * hd_, qs_[i].half, Query(i), hd_, j1 - j0, scale_,
                      Scores(i, b, j0));
      }
    }
  }
  PrefetchRest();
}

void HeadTile::ValuesBlock(int64_t b) {
  const Block blk = Load(true, b);
  const float* rows = blk.rows;
  const int users = blk.users;
  if (!zmm_ || rows == nullptr || hv_ % 8 != 0) {
    PrefetchStart(true, b + 1, avx2_ ? (users + 1) / 2 : users);
    ValuesBlockAvx2(b, blk.wide, blk.data);
    return PrefetchRest();
  }
  PrefetchStart(true, b + 1, (users + kAttnMaxGroup - 1) / kAttnMaxGroup);
  // Up to kAttnMaxGroup queries share each loaded v vector over their common rows; then each one's
  // own rest. Every query still takes its rows in ascending order, one FMA per row and column.
  ForEachRun(qs_, nq_, b, bs_, kAttnMaxGroup, [&](const RowRun& r) {
    PrefetchStep();
    const int64_t common = r.Common();
    const float* p[kAttnMaxGroup];
    float* out[kAttnMaxGroup];
    for (int m = 0; m < r.n; ++m) {
      p[m] = Scores(r.q[m], b, r.j0);
      out[m] = qs_[r.q[m]].out;
    }
    avx512_attn::AccumN(p, out, r.n, rows + r.j0 * hv_, hv_, common - r.j0);
    for (int m = 0; m < r.n; ++m) {
      if (r.j1[m] <= common) continue;
      const float* pm = Scores(r.q[m], b, common);
      avx512_attn::AccumN(&pm, &out[m], 1, rows + common * hv_, hv_, r.j1[m] - common);
    }
  });
  PrefetchRest();
}

// The AVX2 / scalar path: V accumulated two queries at a time where both start at the same row.
void HeadTile::ValuesBlockAvx2(int64_t b, bool wide, const uint8_t* vh) {
  const bool f16 = kv_.f16;
  // Rows [j0, j1) of this block for query i, accumulated from the widened or the stored rows.
  auto rows = [&](int i, int64_t j0, int64_t j1) {
    const float* p = Scores(i, b, j0);
    if (wide) {
      AttnAccumF32(p, kvf_ + j0 * hv_, hv_, j1 - j0, qs_[i].out);
    } else if (f16) {
      AttnAccumF16(p, reinterpret_cast<const uint16_t*>(vh) + j0 * hv_, hv_, j1 - j0, qs_[i].out);
    } else {
      AttnAccumF32(p, reinterpret_cast<const float*>(vh) + j0 * hv_, hv_, j1 - j0, qs_[i].out);
    }
  };
  const int max_len = avx2_ && hv_ % 8 == 0 ? 2 : 1;
  ForEachRun(qs_, nq_, b, bs_, max_len, [&](const RowRun& r) {
    PrefetchStep();
    const int64_t common = r.n == 2 ? r.Common() : r.j0;
    if (common > r.j0) {
      // Two queries from row j0: their common rows together, then each one's own rest.
      const int64_t j0 = r.j0, n = common - j0;
      const AttnQuery &qa = qs_[r.q[0]], &qb = qs_[r.q[1]];
      const float *pa = Scores(r.q[0], b, j0), *pb = Scores(r.q[1], b, j0);
      if (wide) {
        Accum2F32Avx2(pa, pb, kvf_ + j0 * hv_, hv_, n, qa.out, qb.out);
      } else if (f16) {
        Accum2F16Avx2(pa, pb, reinterpret_cast<const uint16_t*>(vh) + j0 * hv_, hv_, n, qa.out, qb.out);
      } else {
        Accum2F32Avx2(pa, pb, reinterpret_cast<const float*>(vh) + j0 * hv_, hv_, n, qa.out, qb.out);
      }
    }
    for (int m = 0; m < r.n; ++m) {
      if (r.j1[m] > common) rows(r.q[m], common, r.j1[m]);
    }
  });
}

}  // namespace

int64_t AttnTileTokens(int64_t group, int64_t keys) {
  constexpr int64_t kTileQueries = 48;
  constexpr int64_t kTileScoreFloats = int64_t{1} << 19;  // 2 MiB of scores per thread
  return std::max<int64_t>(1, std::min(kTileQueries / group, kTileScoreFloats / (group * std::max<int64_t>(1, keys))));
}

void AttendHeads(const AttnKvHead& kv, const AttnQuery* queries, int n_queries, float scale) {
  if (n_queries <= 0) return;
  HeadTile(kv, queries, n_queries, scale).Compute();
}

}  // namespace ember::kernels
