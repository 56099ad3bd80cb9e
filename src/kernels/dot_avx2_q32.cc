// AVX2 row-dot for the 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) against Q8_0/Q8_1
// activations. Per group of 8 blocks: exact integer block sums are packed into one vector (lane =
// block), converted to f32 and FMA'd with dw*dx into 8 lane accumulators — the order of
// dot_kernels.h, bitwise equal to dot_ref.cc. The weight block is unpacked once per tile of tokens.
#include "kernels/avx2_util.h"
#include "kernels/dot_kernels.h"

namespace ember::kernels::avx2 {
namespace {

template <GgmlType Ty> struct Q32Traits;
template <> struct Q32Traits<GgmlType::Q8_0> { static constexpr int kBytes = 34, kQs = 2, kOffset = 0; static constexpr bool kMin = false, kHigh = false, kSigned = true; };
template <> struct Q32Traits<GgmlType::Q4_0> { static constexpr int kBytes = 18, kQs = 2, kOffset = 8; static constexpr bool kMin = false, kHigh = false, kSigned = false; };
template <> struct Q32Traits<GgmlType::Q4_1> { static constexpr int kBytes = 20, kQs = 4, kOffset = 0; static constexpr bool kMin = true, kHigh = false, kSigned = false; };
template <> struct Q32Traits<GgmlType::Q5_0> { static constexpr int kBytes = 22, kQs = 6, kOffset = 16; static constexpr bool kMin = false, kHigh = true, kSigned = false; };
template <> struct Q32Traits<GgmlType::Q5_1> { static constexpr int kBytes = 24, kQs = 8, kOffset = 0; static constexpr bool kMin = true, kHigh = true, kSigned = false; };

// 32 bits -> 32 bytes, byte j = 0x10 if bit j is set (the Q5 fifth bit, already in place).
EMBER_AVX2 inline __m256i HighBits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
  const __m256i sel = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// The block's weights as 32 bytes: signed values for Q8_0, unsigned 0..15 / 0..31 otherwise
// (the offset 8 / 16 is subtracted later through the activation block sums).
template <GgmlType Ty>
EMBER_AVX2 inline __m256i Unpack(const uint8_t* blk) {
  using Tr = Q32Traits<Ty>;
  if constexpr (Tr::kSigned) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + Tr::kQs));
  } else {
    // Both halves get the 16 bytes; the upper one is shifted by 4 to expose the high nibbles.
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + Tr::kQs)));
    __m256i u = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
    if constexpr (Tr::kHigh) u = _mm256_or_si256(u, HighBits(blk + Tr::kQs - 4));
    return u;
  }
}

// Per-block products as 16 int16 pair sums (maddubs), before widening.
template <GgmlType Ty>
EMBER_AVX2 inline __m256i BlockPairs(__m256i w, const int8_t* xq) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
  if constexpr (Q32Traits<Ty>::kSigned) {
    // maddubs needs an unsigned operand: |w| * (x with w's sign) = w * x. |w| <= 128 and |x| <= 127
    // keep each int16 pair sum within 32512.
    return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  } else {
    return _mm256_maddubs_epi16(w, x);
  }
}

// Two blocks' products -> hadd_epi32(widen(a), widen(b)). For the 4/5-bit types a pair sum is at
// most 31*127*2, so two of them still fit int16 and one hadd_epi16 + one madd does the work of two
// madds + one hadd_epi32; Q8_0's pair sums (up to 32512) must be widened first.
template <GgmlType Ty>
EMBER_AVX2 inline __m256i PairSums(__m256i pa, __m256i pb) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (Q32Traits<Ty>::kSigned) {
    return _mm256_hadd_epi32(_mm256_madd_epi16(pa, ones), _mm256_madd_epi16(pb, ones));
  } else {
    return _mm256_madd_epi16(_mm256_hadd_epi16(pa, pb), ones);
  }
}

// 8 per-block values starting at block g as a vector; past `cnt` (a row's last, partial group)
// the lanes are zero, which the reference mirrors with fma(0, 0, acc).
template <bool kFull>
EMBER_AVX2 inline __m256 Load8F(const float* src, int cnt) {
  if constexpr (kFull) return _mm256_loadu_ps(src);
  alignas(32) float v[8] = {};
  for (int l = 0; l < cnt; ++l) v[l] = src[l];
  return _mm256_load_ps(v);
}
template <bool kFull>
EMBER_AVX2 inline __m256i Load8I(const int32_t* src, int cnt) {
  if constexpr (kFull) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  alignas(32) int32_t v[8] = {};
  for (int l = 0; l < cnt; ++l) v[l] = src[l];
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(v));
}
// The fp16 at byte `off` of 8 consecutive blocks, widened.
template <int kBytes, bool kFull>
EMBER_AVX2 inline __m256 Gather8Fp16(const uint8_t* p, int cnt) {
  if constexpr (kFull) {
    // Packed in general-purpose registers (integer ALUs, off the SIMD ports the dot products
    // saturate), then moved over as two 64-bit halves.
    auto q4 = [&](int i) {
      return static_cast<uint64_t>(LoadU16(p + i * kBytes)) |
             static_cast<uint64_t>(LoadU16(p + (i + 1) * kBytes)) << 16 |
             static_cast<uint64_t>(LoadU16(p + (i + 2) * kBytes)) << 32 |
             static_cast<uint64_t>(LoadU16(p + (i + 3) * kBytes)) << 48;
    };
    const __m128i h = _mm_unpacklo_epi64(_mm_cvtsi64_si128(static_cast<long long>(q4(0))),
                                         _mm_cvtsi64_si128(static_cast<long long>(q4(4))));
    return _mm256_cvtph_ps(h);
  }
  alignas(16) uint16_t h[8] = {};
  for (int l = 0; l < cnt; ++l) h[l] = LoadU16(p + l * kBytes);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// Unsigned (4/5-bit) weights: 8 products still fit an int16 (8*31*127 = 31496), so the first two
// levels of the 8-block tree add int16 lanes after interleaving (unpack at 32- then 64-bit
// granularity), which leaves each block's partials in adjacent lane pairs; one madd per 4 blocks
// then widens and adds those pairs, and Combine8 adds the 128-bit halves. Only unpacks and adds, no
// hadd (3 uops each on Zen 3) and no sign-extension: Q4_0 prefill matmul ~12% faster than the
// madd/hadd32 tree, which Q8_0 keeps (its pair sums reach 32512, no int16 headroom).
template <GgmlType Ty>
inline constexpr bool kNarrowTree = !Q32Traits<Ty>::kSigned;

// The reduction tree's three levels: two blocks' pair sums -> one vector, two of those -> one, and
// the last two -> lane l = block l's total.
template <GgmlType Ty>
EMBER_AVX2 inline __m256i Level1(__m256i a, __m256i b) {  // narrow: [a a b b a a b b] per half
  if constexpr (kNarrowTree<Ty>) {
    return _mm256_add_epi16(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
  }
  return PairSums<Ty>(a, b);
}
template <GgmlType Ty>
EMBER_AVX2 inline __m256i Level2(__m256i a, __m256i b) {  // narrow: [a a b b c c d d] per half
  if constexpr (kNarrowTree<Ty>) {
    return _mm256_add_epi16(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
  }
  return _mm256_hadd_epi32(a, b);
}
template <GgmlType Ty>
EMBER_AVX2 inline __m256i Level3(__m256i a, __m256i b) {
  if constexpr (kNarrowTree<Ty>) {
    const __m256i ones = _mm256_set1_epi16(1);
    return Combine8(_mm256_madd_epi16(a, ones), _mm256_madd_epi16(b, ones));
  }
  return Combine8(a, b);
}

// Block idx's pair sums for one token; zero past `cnt` (no activation bytes are read there).
template <GgmlType Ty, bool kFull>
EMBER_AVX2 inline __m256i Pairs(const __m256i* w, const int8_t* x, int idx, int cnt) {
  if (kFull || idx < cnt) return BlockPairs<Ty>(w[idx], x + idx * 32);
  return _mm256_setzero_si256();
}

// Two orders for the same sums. Narrow trees: all 8 blocks unpacked first, then one token's whole
// tree at a time, so only ~3 partial vectors are live (tile-major order spilled; this is ~7% faster
// for Q4_0). Q8_0's wider tree measured ~5% slower that way (its sign step is per block and token),
// so it keeps the tile-major order, each level done for every token of the tile.
template <GgmlType Ty, int T, bool kFull>
EMBER_AVX2 inline void TokenMajorSums(const uint8_t* row, int64_t g, int cnt, const ActRow* acts, __m256i* out) {
  __m256i w[8];
  for (int idx = 0; idx < 8; ++idx) {
    w[idx] = (kFull || idx < cnt) ? Unpack<Ty>(row + (g + idx) * Q32Traits<Ty>::kBytes) : _mm256_setzero_si256();
  }
  for (int t = 0; t < T; ++t) {
    const int8_t* x = acts[t].q + g * 32;
    const __m256i a = Level2<Ty>(Level1<Ty>(Pairs<Ty, kFull>(w, x, 0, cnt), Pairs<Ty, kFull>(w, x, 1, cnt)),
                                 Level1<Ty>(Pairs<Ty, kFull>(w, x, 2, cnt), Pairs<Ty, kFull>(w, x, 3, cnt)));
    const __m256i b = Level2<Ty>(Level1<Ty>(Pairs<Ty, kFull>(w, x, 4, cnt), Pairs<Ty, kFull>(w, x, 5, cnt)),
                                 Level1<Ty>(Pairs<Ty, kFull>(w, x, 6, cnt), Pairs<Ty, kFull>(w, x, 7, cnt)));
    out[t] = Level3<Ty>(a, b);
  }
}

template <GgmlType Ty, int T, bool kFull>
EMBER_AVX2 inline void TileMajorSums(const uint8_t* row, int64_t g, int cnt, const ActRow* acts, __m256i* out) {
  using Tr = Q32Traits<Ty>;
  __m256i half[2][T];
  for (int h = 0; h < 2; ++h) {
    __m256i pair[2][T];
    for (int k2 = 0; k2 < 2; ++k2) {
      __m256i p[2][T];
      for (int k = 0; k < 2; ++k) {
        const int idx = 4 * h + 2 * k2 + k;
        if (kFull || idx < cnt) {
          const __m256i w = Unpack<Ty>(row + (g + idx) * Tr::kBytes);
          for (int t = 0; t < T; ++t) p[k][t] = BlockPairs<Ty>(w, acts[t].q + (g + idx) * 32);
        } else {
          for (int t = 0; t < T; ++t) p[k][t] = _mm256_setzero_si256();
        }
      }
      for (int t = 0; t < T; ++t) pair[k2][t] = Level1<Ty>(p[0][t], p[1][t]);
    }
    for (int t = 0; t < T; ++t) half[h][t] = Level2<Ty>(pair[0][t], pair[1][t]);
  }
  for (int t = 0; t < T; ++t) out[t] = Level3<Ty>(half[0][t], half[1][t]);
}

// Integer sums of blocks g..g+cnt-1 for T tokens: out[t] lane l = block g+l (0 for l >= cnt),
// with the unsigned-offset correction applied.
template <GgmlType Ty, int T, bool kFull>
EMBER_AVX2 inline void GroupSums(const uint8_t* row, int64_t g, int cnt, const ActRow* acts, __m256i* out) {
  using Tr = Q32Traits<Ty>;
  if constexpr (kNarrowTree<Ty>) {
    TokenMajorSums<Ty, T, kFull>(row, g, cnt, acts, out);
  } else {
    TileMajorSums<Ty, T, kFull>(row, g, cnt, acts, out);
  }
  for (int t = 0; t < T; ++t) {
    if constexpr (Tr::kOffset != 0) {
      constexpr int kShift = Tr::kOffset == 8 ? 3 : 4;  // subtract offset * sum(x)
      out[t] = _mm256_sub_epi32(out[t], _mm256_slli_epi32(Load8I<kFull>(acts[t].sum + g, cnt), kShift));
    }
  }
}

template <GgmlType Ty, int T, bool kFull>
EMBER_AVX2 inline void Group(const uint8_t* row, int64_t g, int cnt, const ActRow* acts, __m256* acc) {
  using Tr = Q32Traits<Ty>;
  __m256i sums[T];
  GroupSums<Ty, T, kFull>(row, g, cnt, acts, sums);
  const uint8_t* first = row + g * Tr::kBytes;
  const __m256 dw = Gather8Fp16<Tr::kBytes, kFull>(first, cnt);
  for (int t = 0; t < T; ++t) {
    const __m256 scale = _mm256_mul_ps(dw, Load8F<kFull>(acts[t].d + g, cnt));
    acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sums[t]), acc[t]);
  }
  if constexpr (Tr::kMin) {
    const __m256 m = Gather8Fp16<Tr::kBytes, kFull>(first + 2, cnt);
    for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(m, Load8F<kFull>(acts[t].s + g, cnt), acc[t]);
  }
}

template <GgmlType Ty, int T>
EMBER_AVX2 void Dot32T(const uint8_t* row, int64_t n, const ActRow* acts, float* out, int64_t stride) {
  using Tr = Q32Traits<Ty>;
  const int64_t nb = n / 32, full = nb / 8 * 8;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t g = 0; g < full; g += 8) {
    // The hardware prefetcher alone does not keep a DRAM-bound matvec fed; past the row end this
    // warms the next row.
    PrefetchAhead(row + g * Tr::kBytes, 8 * Tr::kBytes);
    Group<Ty, T, true>(row, g, 8, acts, acc);
  }
  if (full < nb) Group<Ty, T, false>(row, full, static_cast<int>(nb - full), acts, acc);
  for (int t = 0; t < T; ++t) out[t * stride] = Hsum(acc[t]);
}

template <GgmlType Ty>
EMBER_AVX2 void Dot32(const uint8_t* row, int64_t n, const ActRow* acts, int n_acts, float* out, int64_t stride) {
  switch (n_acts) {
    case 4: Dot32T<Ty, 4>(row, n, acts, out, stride); return;
    case 3: Dot32T<Ty, 3>(row, n, acts, out, stride); return;
    case 2: Dot32T<Ty, 2>(row, n, acts, out, stride); return;
    default: Dot32T<Ty, 1>(row, n, acts, out, stride); return;
  }
}

}  // namespace

DotFn Block32DotFn(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return Dot32<GgmlType::Q8_0>;
    case GgmlType::Q4_0: return Dot32<GgmlType::Q4_0>;
    case GgmlType::Q4_1: return Dot32<GgmlType::Q4_1>;
    case GgmlType::Q5_0: return Dot32<GgmlType::Q5_0>;
    case GgmlType::Q5_1: return Dot32<GgmlType::Q5_1>;
    default: return nullptr;
  }
}

}  // namespace ember::kernels::avx2
