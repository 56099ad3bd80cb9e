#include "kernels/attention_head.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/avx2_util.h"
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

}  // namespace

void AttendHeads(const AttnKvHead& kv, const AttnQuery* queries, int n_queries, float scale) {
  if (n_queries <= 0) return;
  const int hd = kv.head_dim_k, hv = kv.head_dim_v;
  const int64_t bs = kv.block_size;
  const bool f16 = kv.f16;
  const bool avx2 = CpuHasAvx2();
  // The AVX2 kernels read an F16 row as f32(k) exactly, so widening a block once into f32 and running
  // the F32 kernel on it is the same arithmetic; with two or more queries on a block that pays the
  // conversion once per tile instead of once per query (and per GQA head).
  const bool widen_k = f16 && avx2 && hd % 32 == 0;
  const bool widen_v = f16 && avx2 && hv % 8 == 0;
  // q rounded to fp16 and widened once per query, not per key (one hd-row per query).
  thread_local std::vector<float> qf_all, kvf;
  if (f16) {
    qf_all.resize(static_cast<size_t>(n_queries) * static_cast<size_t>(hd));
    for (int i = 0; i < n_queries; ++i) {
      AttnPrepareQueryF16(queries[i].q, hd, queries[i].half, qf_all.data() + static_cast<size_t>(i) * hd);
    }
  }
  if (widen_k || widen_v) kvf.resize(static_cast<size_t>(bs) * static_cast<size_t>(std::max(hd, hv)));
  // The blocks any query touches, and whether all queries sit at one position (a decode step).
  int64_t b_lo = INT64_MAX, b_end = 0;
  bool one_position = true;
  for (int i = 0; i < n_queries; ++i) {
    one_position = one_position && queries[i].n_keys == queries[0].n_keys;
    if (queries[i].n_keys <= queries[i].k0) continue;
    b_lo = std::min(b_lo, queries[i].k0 / bs);
    b_end = std::max(b_end, (queries[i].n_keys + bs - 1) / bs);
  }
  // Blocks are separate allocations, so the hardware prefetcher loses the stream at each boundary; in
  // a decode step the KV comes from DRAM, so the next block is requested while this one is used. A
  // prefill tile finds its blocks in cache and skips this.
  const size_t elem = f16 ? 2 : 4;
  auto prefetch_block = [&](bool v, int64_t b) {
    if (!one_position || b >= b_end) return;
    const uint8_t* p = kv.block(kv.ctx, v, b);
    const size_t bytes = static_cast<size_t>(bs) * static_cast<size_t>(v ? hv : hd) * elem;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
  };
  // Rows [u0, u1) of block b that some query sees, and how many queries see any; widens them into
  // kvf when that is shared (returns whether it did).
  auto widen_block = [&](const uint8_t* h, int dim, bool enabled, int64_t b) {
    if (!enabled) return false;
    int64_t u0 = bs, u1 = 0;
    int users = 0;
    for (int i = 0; i < n_queries; ++i) {
      int64_t j0, j1;
      if (!BlockRows(queries[i], b, bs, &j0, &j1)) continue;
      u0 = std::min(u0, j0);
      u1 = std::max(u1, j1);
      ++users;
    }
    if (users < 2) return false;
    WidenF16(reinterpret_cast<const uint16_t*>(h) + u0 * dim, kvf.data() + u0 * dim, (u1 - u0) * dim);
    return true;
  };
  for (int64_t b = b_lo; b < b_end; ++b) {  // scores = (k_j · q) * scale
    const uint8_t* kh = kv.block(kv.ctx, false, b);  // [bs][hd]
    prefetch_block(false, b + 1);
    const bool wide = widen_block(kh, hd, widen_k, b);
    for (int i = 0; i < n_queries; ++i) {
      const AttnQuery& qu = queries[i];
      int64_t j0, j1;
      if (!BlockRows(qu, b, bs, &j0, &j1)) continue;
      float* sc = qu.scores + (b * bs - qu.k0) + j0;  // scores[i] belongs to key k0 + i
      const float* qf = qf_all.data() + static_cast<size_t>(i) * hd;
      if (wide) {
        AttnScoresF32(kvf.data() + j0 * hd, qf, hd, j1 - j0, scale, sc);
      } else if (f16) {
        AttnScoresF16(reinterpret_cast<const uint16_t*>(kh) + j0 * hd, qu.half, qf, hd, j1 - j0, scale, sc);
      } else {
        AttnScoresF32(reinterpret_cast<const float*>(kh) + j0 * hd, qu.q, hd, j1 - j0, scale, sc);
      }
    }
  }
  for (int i = 0; i < n_queries; ++i) {
    const AttnQuery& qu = queries[i];
    const int64_t n = std::max<int64_t>(0, qu.n_keys - qu.k0);
    Softmax(qu.scores, static_cast<int>(n));
    if (f16) {  // p = f32(fp16(p)) in place: the weight AxpyF16 was given, Fp16ToF32(p16[j])
      uint16_t* p16 = qu.half + hd;
      RoundToF16(qu.scores, p16, static_cast<int>(n));
      WidenF16(p16, qu.scores, n);
    }
    std::fill(qu.out, qu.out + hv, 0.0f);
  }
  const bool pairs = avx2 && hv % 8 == 0;
  for (int64_t b = b_lo; b < b_end; ++b) {  // out = Σ_j p_j v_j
    const uint8_t* vh = kv.block(kv.ctx, true, b);  // [bs][hv]
    prefetch_block(true, b + 1);
    const bool wide = widen_block(vh, hv, widen_v, b);
    // Rows [j0, j1) of this block for query qu, accumulated from the widened or the stored rows.
    auto rows = [&](const AttnQuery& qu, int64_t j0, int64_t j1) {
      const float* p = qu.scores + (b * bs - qu.k0) + j0;
      if (wide) {
        AttnAccumF32(p, kvf.data() + j0 * hv, hv, j1 - j0, qu.out);
      } else if (f16) {
        AttnAccumF16(p, reinterpret_cast<const uint16_t*>(vh) + j0 * hv, hv, j1 - j0, qu.out);
      } else {
        AttnAccumF32(p, reinterpret_cast<const float*>(vh) + j0 * hv, hv, j1 - j0, qu.out);
      }
    };
    int pending = -1;  // a query waiting for a partner with the same first row
    int64_t pj0 = 0, pj1 = 0;
    for (int i = 0; i < n_queries; ++i) {
      const AttnQuery& qu = queries[i];
      int64_t j0, j1;
      if (!BlockRows(qu, b, bs, &j0, &j1)) continue;
      if (!pairs) {
        rows(qu, j0, j1);
        continue;
      }
      if (pending < 0 || pj0 != j0) {
        if (pending >= 0) rows(queries[pending], pj0, pj1);
        pending = i, pj0 = j0, pj1 = j1;
        continue;
      }
      // Two queries from row j0: their common rows together, then each one's own rest — every
      // query still takes its rows in ascending order, one FMA per row and column.
      const AttnQuery& qa = queries[pending];
      const int64_t common = std::min(pj1, j1);
      const float* pa = qa.scores + (b * bs - qa.k0) + j0;
      const float* pb = qu.scores + (b * bs - qu.k0) + j0;
      if (wide) {
        Accum2F32Avx2(pa, pb, kvf.data() + j0 * hv, hv, common - j0, qa.out, qu.out);
      } else if (f16) {
        Accum2F16Avx2(pa, pb, reinterpret_cast<const uint16_t*>(vh) + j0 * hv, hv, common - j0, qa.out, qu.out);
      } else {
        Accum2F32Avx2(pa, pb, reinterpret_cast<const float*>(vh) + j0 * hv, hv, common - j0, qa.out, qu.out);
      }
      if (pj1 > common) rows(qa, common, pj1);
      if (j1 > common) rows(qu, common, j1);
      pending = -1;
    }
    if (pending >= 0) rows(queries[pending], pj0, pj1);
  }
}

}  // namespace ember::kernels
