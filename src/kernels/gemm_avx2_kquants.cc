// AVX2 GEMM kernels for Q4_K, Q5_K, Q6_K (see gemm_kernels.h): 8 weight rows x up to 16 tokens.
//
// Layout: one f32 / int32 lane per weight row. Per super-block the 8 rows' quants are transposed on the
// fly (shared by the whole token tile) so that int32 lane r of a vector holds 4 consecutive quants of
// row r; each token's matching 4 activation bytes are broadcast, vpmaddubsw gives lane r's products,
// several of them are summed in int16 while the bounds allow, and vpmaddwd with the per-row sub-block
// scales widens to int32 lane r. Every (row, token) thus gets its super-block's exact integer sums
// directly in its lane, and the f32 part is the DotFn's sequence lane-wise:
//   acc = fma(d * dy, float(isum), acc); acc = fma(-(dmin * dy), float(msum), acc)   (Q4_K/Q5_K)
// with the products d * dy and -(dmin * dy) formed as the reference forms them (one f32 multiply,
// then a sign flip), so results are bitwise those of dot_ref.cc.
//
// int16 bounds (activations may be anything in [-128, 127]): a vpmaddubsw lane is two products.
// Q4_K: |2 * 15 * 128| = 3840, 8 summed = 30720. Q5_K: 2 * 31 * 128 = 7936, 4 summed = 31744.
// Q6_K runs on signed weights (q - 32) against unsigned activations (x + 128): 2 * 255 * 32 = 16320,
// 2 summed = 32640; the +128 is removed per row with the weights' own sums (see GemmQ6K).
#include <cmath>
#include <cstring>

#include "kernels/avx2_util.h"
#include "kernels/gemm_kernels.h"

namespace ember::kernels::avx2 {
namespace {

using V = __m256i;

EMBER_AVX2 inline V Load(const void* p) { return _mm256_loadu_si256(static_cast<const V*>(p)); }
EMBER_AVX2 inline V Bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// a[k] int32 lane g -> out[g] int32 lane k, within each 128-bit half.
EMBER_AVX2 inline void Transpose4x4x2(const V* a, V* out) {
  const V t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
  const V t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// 32 bytes at offset `off` of each of the 8 rows, transposed: v[g] int32 lane r = bytes 4g..4g+3 of
// row r. Rows r and r + 4 are loaded into the two halves of one vector (the inserts run on the load
// ports), so only in-lane 4x4 transposes remain: 16 shuffles instead of a full 8x8's 24.
EMBER_AVX2 inline void LoadTransposed(const uint8_t* const* rp, size_t off, V* v) {
  V a[4], b[4];
  for (int k = 0; k < 4; ++k) {
    a[k] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(rp[k + 4] + off),
                               reinterpret_cast<const __m128i*>(rp[k] + off));
    b[k] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(rp[k + 4] + off + 16),
                               reinterpret_cast<const __m128i*>(rp[k] + off + 16));
  }
  Transpose4x4x2(a, v);
  Transpose4x4x2(b, v + 4);
}

// The f16 at offset `off` of each row as 8 f32 lanes (exact, like the reference's conversion).
EMBER_AVX2 inline __m256 RowHalves(const uint8_t* const* rp, size_t off) {
  alignas(16) uint16_t h[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) h[r] = LoadU16(rp[r] + off);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// ---- Q4_K / Q5_K --------------------------------------------------------------------------------

// Shifts each 16-bit lane left by `by` (right by -by); a constant after unrolling.
EMBER_AVX2 inline V ShiftBits(V v, int by) {
  if (by > 0) return _mm256_slli_epi16(v, by);
  if (by < 0) return _mm256_srli_epi16(v, -by);
  return v;
}

// Per super-block data of 8 rows for Q4_K/Q5_K, shared by the token tile.
struct K45Block {
  V w[64];    // [sub-block j][group g]: int32 lane r = quants 4g..4g+3 of sub-block j of row r (u8)
  V sc[8];    // per j: int16 lanes (2r, 2r+1) = scale of sub-block j of row r
  V mn[4];    // per pair p: int16 lanes (2r, 2r+1) = (min 2p, min 2p+1) of row r
  __m256 d, dmin;
};

template <bool kQ5>
EMBER_AVX2 void PrepareK45(const uint8_t* const* rp, size_t base, K45Block* blk) {
  constexpr size_t kQs = kQ5 ? 48 : 16;
  const V low4 = _mm256_set1_epi8(0x0F);
  V qh[8];
  if constexpr (kQ5) LoadTransposed(rp, base + 16, qh);
  for (int c = 0; c < 4; ++c) {
    V q[8];
    LoadTransposed(rp, base + kQs + 32 * c, q);
    for (int g = 0; g < 8; ++g) {
      V lo = _mm256_and_si256(q[g], low4), hi = _mm256_and_si256(_mm256_srli_epi16(q[g], 4), low4);
      if constexpr (kQ5) {
        // Bits 2c and 2c+1 of qh moved to bit 4 (16-bit shifts; the mask drops cross-byte bits).
        const V m10 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(ShiftBits(qh[g], 4 - 2 * c), m10));
        hi = _mm256_or_si256(hi, _mm256_and_si256(ShiftBits(qh[g], 3 - 2 * c), m10));
      }
      blk->w[16 * c + g] = lo;
      blk->w[16 * c + 8 + g] = hi;
    }
  }
  // Each row's first 16 bytes, rows r and r + 4 in one vector, transposed in-lane: h[0] int32 lane r
  // = d | dmin << 16, h[1..3] = scale words w0..w2 of row r. The six-bit unpacking of the row kernel
  // (ggml's get_scale_min_k4 layout, four bytes at a time: sub-blocks 0..3 keep the low 6 bits of
  // w0 (scales) and w1 (mins), 4..7 take a nibble of w2 plus the top 2 bits of w0 / w1) then runs on
  // all 8 rows at once, byte j of each result lane being sub-block j.
  V a[4], h[4];
  for (int k = 0; k < 4; ++k) {
    a[k] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(rp[k + 4] + base),
                               reinterpret_cast<const __m128i*>(rp[k] + base));
  }
  Transpose4x4x2(a, h);
  const V m3f = _mm256_set1_epi8(0x3f), m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  const V sc_lo = _mm256_and_si256(h[1], m3f), mn_lo = _mm256_and_si256(h[2], m3f);
  const V sc_hi = _mm256_or_si256(_mm256_and_si256(h[3], m0f), _mm256_and_si256(_mm256_srli_epi32(h[1], 2), m30));
  const V mn_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(h[3], 4), m0f),
                                  _mm256_and_si256(_mm256_srli_epi32(h[2], 2), m30));
  // Byte j of lane r's int32 to int16 lanes (2r, 2r+1), zero-extended (0x80 selects a zero byte);
  // for the mins bytes 2p' and 2p'+1 of it.
  const V pick_sc = _mm256_setr_epi8(0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12, -128,
                                     0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12, -128);
  const V pick_mn = _mm256_setr_epi8(0, -128, 1, -128, 4, -128, 5, -128, 8, -128, 9, -128, 12, -128, 13, -128,
                                     0, -128, 1, -128, 4, -128, 5, -128, 8, -128, 9, -128, 12, -128, 13, -128);
  for (int j = 0; j < 4; ++j) {
    const V pick = _mm256_add_epi16(pick_sc, _mm256_set1_epi16(static_cast<int16_t>(j)));
    blk->sc[j] = _mm256_shuffle_epi8(sc_lo, pick);
    blk->sc[j + 4] = _mm256_shuffle_epi8(sc_hi, pick);
  }
  for (int p = 0; p < 2; ++p) {
    const V pick = _mm256_add_epi16(pick_mn, _mm256_set1_epi16(static_cast<int16_t>(2 * p)));
    blk->mn[p] = _mm256_shuffle_epi8(mn_lo, pick);
    blk->mn[p + 2] = _mm256_shuffle_epi8(mn_hi, pick);
  }
  // d and dmin: the low and high halves of h[0]'s lanes, gathered to [d0..7 | dmin0..7].
  const V dd = _mm256_permute4x64_epi64(
      _mm256_shuffle_epi8(h[0], _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5,
                                                 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15)),
      0xD8);
  blk->d = _mm256_cvtph_ps(_mm256_castsi256_si128(dd));
  blk->dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(dd, 1));
}

template <bool kQ5>
EMBER_AVX2 void GemmK45(const uint8_t* rows, size_t row_bytes, int64_t n_in, const ActRow* acts, int n_acts,
                        float* out, int64_t stride) {
  constexpr size_t kBytes = kQ5 ? 176 : 144;
  const uint8_t* rp[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) rp[r] = rows + r * row_bytes;
  K45Block blk;
  __m256 acc[kGemmMaxTile];
  V isum[kGemmMaxTile];
  for (int t = 0; t < n_acts; ++t) acc[t] = _mm256_setzero_ps();
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n_in / 256; ++b) {
    PrepareK45<kQ5>(rp, static_cast<size_t>(b) * kBytes, &blk);
    for (int j = 0; j < 8; ++j) {
      const V* w = blk.w + 8 * j;
      const V w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7];
      const V sc = blk.sc[j];
      for (int t = 0; t < n_acts; ++t) {
        const int8_t* x = acts[t].q + b * 256 + 32 * j;
        V s;
        if constexpr (kQ5) {  // 4 products per int16 at most: two vpmaddwd
          const V a = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w0, Bcast32(x)),
                                                        _mm256_maddubs_epi16(w1, Bcast32(x + 4))),
                                       _mm256_add_epi16(_mm256_maddubs_epi16(w2, Bcast32(x + 8)),
                                                        _mm256_maddubs_epi16(w3, Bcast32(x + 12))));
          const V c = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w4, Bcast32(x + 16)),
                                                        _mm256_maddubs_epi16(w5, Bcast32(x + 20))),
                                       _mm256_add_epi16(_mm256_maddubs_epi16(w6, Bcast32(x + 24)),
                                                        _mm256_maddubs_epi16(w7, Bcast32(x + 28))));
          s = _mm256_add_epi32(_mm256_madd_epi16(a, sc), _mm256_madd_epi16(c, sc));
        } else {  // 8 products per int16 fit: one vpmaddwd
          const V a = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w0, Bcast32(x)),
                                                        _mm256_maddubs_epi16(w1, Bcast32(x + 4))),
                                       _mm256_add_epi16(_mm256_maddubs_epi16(w2, Bcast32(x + 8)),
                                                        _mm256_maddubs_epi16(w3, Bcast32(x + 12))));
          const V c = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w4, Bcast32(x + 16)),
                                                        _mm256_maddubs_epi16(w5, Bcast32(x + 20))),
                                       _mm256_add_epi16(_mm256_maddubs_epi16(w6, Bcast32(x + 24)),
                                                        _mm256_maddubs_epi16(w7, Bcast32(x + 28))));
          s = _mm256_madd_epi16(_mm256_add_epi16(a, c), sc);
        }
        isum[t] = j == 0 ? s : _mm256_add_epi32(isum[t], s);
      }
    }
    for (int t = 0; t < n_acts; ++t) {
      // Sub-block sums S_j = sum16[2j] + sum16[2j+1]; hadd gives [S0 S1 S4 S5 | S2 S3 S6 S7] and
      // packs makes (S_2p, S_2p+1) int16 pairs: int32 lanes [P0 P2 . . | P1 P3 . .].
      const int32_t* bs = acts[t].sum + b * 16;
      const V h = _mm256_hadd_epi32(Load(bs), Load(bs + 8));
      const V pk = _mm256_packs_epi32(h, h);
      const V p0 = _mm256_permutevar8x32_epi32(pk, _mm256_set1_epi32(0));
      const V p1 = _mm256_permutevar8x32_epi32(pk, _mm256_set1_epi32(4));
      const V p2 = _mm256_permutevar8x32_epi32(pk, _mm256_set1_epi32(1));
      const V p3 = _mm256_permutevar8x32_epi32(pk, _mm256_set1_epi32(5));
      const V msum = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(blk.mn[0], p0), _mm256_madd_epi16(blk.mn[1], p1)),
                                      _mm256_add_epi32(_mm256_madd_epi16(blk.mn[2], p2), _mm256_madd_epi16(blk.mn[3], p3)));
      const __m256 dy = _mm256_set1_ps(acts[t].d[b]);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(blk.d, dy), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      acc[t] = _mm256_fmadd_ps(_mm256_xor_ps(_mm256_mul_ps(blk.dmin, dy), sign), _mm256_cvtepi32_ps(msum), acc[t]);
    }
  }
  for (int t = 0; t < n_acts; ++t) _mm256_storeu_ps(out + t * stride, acc[t]);
}

// ---- Q6_K ---------------------------------------------------------------------------------------

// Per super-block data of 8 rows for Q6_K.
struct Q6KBlock {
  V w[64];    // [part P][group g]: int32 lane r = signed quants (q - 32) 32P + 4g.. of row r
  V sc[16];   // per 16-element sub-block: int16 lanes (2r, 2r+1) = its int8 scale in row r
  V corr;     // lane r: 128 * sum_s sc[s] * sum(q - 32 over s): what the +128 on activations adds
  __m256 d;
};

// The integer dot of part p of the prepared block with one token's 32 activations of that part as
// unsigned bytes (x + 128) at xu. Sub-block 2p + (g >= 4) scales group g; two groups (4 products)
// per int16 lane fit.
EMBER_AVX2 inline V DotQ6KPart(const Q6KBlock& blk, int p, const int8_t* xu) {
  const V* w = blk.w + 8 * p;
  V s[4];
  for (int i = 0; i < 4; ++i) {
    s[i] = _mm256_add_epi16(_mm256_maddubs_epi16(Bcast32(xu + 8 * i), w[2 * i]),
                            _mm256_maddubs_epi16(Bcast32(xu + 8 * i + 4), w[2 * i + 1]));
  }
  const V s0 = blk.sc[2 * p], s1 = blk.sc[2 * p + 1];
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s[0], s0), _mm256_madd_epi16(s[1], s0)),
                          _mm256_add_epi32(_mm256_madd_epi16(s[2], s1), _mm256_madd_epi16(s[3], s1)));
}

EMBER_AVX2 void PrepareQ6K(const uint8_t* const* rp, size_t base, Q6KBlock* blk) {
  const V low4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), k32 = _mm256_set1_epi8(32);
  for (int h = 0; h < 2; ++h) {
    V l0[8], l1[8], qh[8];
    LoadTransposed(rp, base + 64 * h, l0);
    LoadTransposed(rp, base + 64 * h + 32, l1);
    LoadTransposed(rp, base + 128 + 32 * h, qh);
    V* w = blk->w + 32 * h;
    for (int g = 0; g < 8; ++g) {
      // Bits 2k, 2k+1 of qh moved to bits 4, 5 (the mask drops what a 16-bit shift carries over).
      const V q0 = _mm256_or_si256(_mm256_and_si256(l0[g], low4), _mm256_and_si256(_mm256_slli_epi16(qh[g], 4), m30));
      const V q1 = _mm256_or_si256(_mm256_and_si256(l1[g], low4), _mm256_and_si256(_mm256_slli_epi16(qh[g], 2), m30));
      const V q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0[g], 4), low4), _mm256_and_si256(qh[g], m30));
      const V q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1[g], 4), low4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh[g], 2), m30));
      w[g] = _mm256_sub_epi8(q0, k32);
      w[8 + g] = _mm256_sub_epi8(q1, k32);
      w[16 + g] = _mm256_sub_epi8(q2, k32);
      w[24 + g] = _mm256_sub_epi8(q3, k32);
    }
  }
  // The 16 int8 scales of each row (rows r and r + 4 paired), transposed in-lane: h[q] int32 lane r =
  // scales 4q..4q+3 of row r. Scale 4q + i goes to the high byte of int16 lanes (2r, 2r+1) and an
  // arithmetic shift sign-extends it.
  V a[4], h[4];
  for (int k = 0; k < 4; ++k) {
    a[k] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(rp[k + 4] + base + 192),
                               reinterpret_cast<const __m128i*>(rp[k] + base + 192));
  }
  Transpose4x4x2(a, h);
  const V pick = _mm256_setr_epi8(-128, 0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12,
                                  -128, 0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12);
  for (int i = 0; i < 4; ++i) {
    const V pi = _mm256_add_epi16(pick, _mm256_set1_epi16(static_cast<int16_t>(i << 8)));
    for (int q = 0; q < 4; ++q) blk->sc[4 * q + i] = _mm256_srai_epi16(_mm256_shuffle_epi8(h[q], pi), 8);
  }
  // The weights' scaled sums sum_s sc[s] * sum(q - 32 over s): a sub-block's 4 groups summed in int8
  // first (4 * [-32, 31] fits), then one vpmaddubsw by ones and one vpmaddwd by the scale.
  const V ones = _mm256_set1_epi8(1);
  V c = _mm256_setzero_si256();
  for (int sb = 0; sb < 16; ++sb) {
    const V* w = blk->w + 4 * sb;
    const V g = _mm256_add_epi8(_mm256_add_epi8(w[0], w[1]), _mm256_add_epi8(w[2], w[3]));
    c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, g), blk->sc[sb]));
  }
  blk->corr = _mm256_slli_epi32(c, 7);
  blk->d = RowHalves(rp, base + 208);
}

EMBER_AVX2 void GemmQ6K(const uint8_t* rows, size_t row_bytes, int64_t n_in, const ActRow* acts, int n_acts,
                        float* out, int64_t stride) {
  const uint8_t* rp[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) rp[r] = rows + r * row_bytes;
  Q6KBlock blk;
  alignas(32) uint8_t xu[kGemmMaxTile][256];
  __m256 acc[kGemmMaxTile];
  for (int t = 0; t < n_acts; ++t) acc[t] = _mm256_setzero_ps();
  const V bias = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < n_in / 256; ++b) {
    PrepareQ6K(rp, static_cast<size_t>(b) * 210, &blk);
    for (int t = 0; t < n_acts; ++t) {
      const int8_t* x = acts[t].q + b * 256;
      for (int i = 0; i < 256; i += 32) {
        _mm256_store_si256(reinterpret_cast<V*>(xu[t] + i), _mm256_xor_si256(Load(x + i), bias));
      }
    }
    V isum[kGemmMaxTile];
    for (int p = 0; p < 8; ++p) {
      for (int t = 0; t < n_acts; ++t) {
        const int8_t* x = reinterpret_cast<const int8_t*>(xu[t] + 32 * p);
        const V s = DotQ6KPart(blk, p, x);
        isum[t] = p == 0 ? s : _mm256_add_epi32(isum[t], s);
      }
    }
    for (int t = 0; t < n_acts; ++t) {
      const __m256 dy = _mm256_set1_ps(acts[t].d[b]);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(blk.d, dy), _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], blk.corr)), acc[t]);
    }
  }
  for (int t = 0; t < n_acts; ++t) _mm256_storeu_ps(out + t * stride, acc[t]);
}

}  // namespace

GemmFn KQuantGemmFn(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return GemmK45<false>;
    case GgmlType::Q5_K: return GemmK45<true>;
    case GgmlType::Q6_K: return GemmQ6K;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
