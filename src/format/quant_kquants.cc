// The 256-element K-quant super-blocks: q4_K, q5_K, q6_K.
//
// Layouts (bytes):
//   q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}                    144 bytes
//   q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}         176 bytes
//   q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}                   210 bytes
// q4_K/q5_K: eight sub-blocks of 32, value = (d*sc[j]) * q - (dmin*m[j]) with 6-bit sc/m (see
// PackScaleMinK4). Element e lives in qs[32*(e/64) + e%32], low nibble when (e/32) is even, high nibble
// when odd; q5_K's fifth bit is bit (e/32) of qh[e%32].
// q6_K: sixteen sub-blocks of 16, value = (d*scales[e/16]) * (q - 32) with 6-bit q. For element e, with
// h = e/128, k = (e%128)/32, l = e%32: the low four bits are nibble (k/2) of ql[64h + 32*(k%2) + l] and
// the top two bits are bits 2k..2k+1 of qh[32h + l].
//
// Quantization is ember's own search (not bit-identical to ggml): per sub-block, a sweep of candidate
// inverse scales each refined by least squares, then Lloyd-style reassign/refit passes; the sub-block
// scales are then coded against a super-block fp16 scale, and each coded scale is nudged by +-1 step
// when that lowers the sub-block's squared error with the final codes. Sub-block scales are coded
// against the fp16-rounded super-block step the decoder will use (ggml codes them against the unrounded
// one), which is what keeps the error flat down to tiny weights whose steps are fp16 subnormals.
// Measured on N(0,1) data: RMS error / sigma 0.070 (q4_K), 0.035 (q5_K), 0.017 (q6_K), each a little
// below ggml's reference quantizer; at sigma = 1e-4 the same, where ggml's rises to 0.08/0.055/0.11.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/quant_internal.h"

namespace ember::quant_internal {
namespace {

constexpr int kQK_K = 256;

// ---- Dequantization ---------------------------------------------------------------------------------

// One q4_K/q5_K super-block; qh == nullptr for q4_K.
void DequantK4K5Block(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = LoadHalf(blk), dmin = LoadHalf(blk + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    UnpackScaleMinK4(blk + 4, j, &sc, &m);
    const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
    const uint8_t* bytes = qs + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      int q = (bytes[l] >> shift) & 0xF;
      if (qh != nullptr) q |= ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = ds * static_cast<float>(q) - dm;
    }
  }
}

}  // namespace

// ---- Sub-block fitting (shared with quant_lowbit.cc through quant_internal.h) ------------------------

double AffineAssign(const float* x, int n, int nmax, AffineFit fit, int* L) {
  double err = 0.0;
  const float inv = fit.scale > 0.0f ? 1.0f / fit.scale : 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = fit.scale > 0.0f ? RoundClamp((x[i] + fit.offset) * inv, 0, nmax) : 0;
    const double diff = static_cast<double>(fit.scale) * L[i] - fit.offset - x[i];
    err += diff * diff;
  }
  return err;
}

namespace {

// One candidate: codes for `start`, then the least-squares (scale, offset >= 0) for those codes, written
// to *fit with its squared error (an upper bound on the error after reassigning codes for it). False
// when the codes cannot determine a positive scale.
bool AffineCandidate(const float* x, int n, int nmax, AffineFit start, AffineFit* fit, double* err) {
  const float inv = 1.0f / start.scale;
  double sl = 0, sl2 = 0, sx = 0, sxl = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    const double l = RoundClamp((x[i] + start.offset) * inv, 0, nmax), xi = x[i];
    sl += l;
    sl2 += l * l;
    sx += xi;
    sxl += xi * l;
    sxx += xi * xi;
  }
  const double det = n * sl2 - sl * sl;
  if (det <= 0) return false;
  double a = (n * sxl - sx * sl) / det;
  double b = (sl2 * sx - sl * sxl) / det;  // x ~= a*L + b
  if (b > 0) {                              // the offset must be >= 0: refit with b = 0
    b = 0;
    a = sxl / sl2;
  }
  if (!(a > 0)) return false;
  *err = a * a * sl2 + 2 * a * b * sl + n * b * b - 2 * a * sxl - 2 * b * sx + sxx;
  *fit = {static_cast<float>(a), static_cast<float>(-b)};
  return true;
}

}  // namespace

AffineFit FitAffine(const float* x, int n, int nmax) {
  float lo = *std::min_element(x, x + n), hi = *std::max_element(x, x + n);
  lo = std::min(lo, 0.0f);
  AffineFit best{0.0f, -lo};
  if (hi <= lo) return best;  // constant block (<= 0): exactly the offset
  int L[32];
  best.scale = (hi - lo) / static_cast<float>(nmax);
  double best_err = AffineAssign(x, n, nmax, best, L);
  // Sweep the step around "the range spans nmax steps": a slightly larger step can clip an outlier but
  // place the bulk of the values better; each candidate's step and offset are then refit.
  for (int t = -10; t <= 10; ++t) {
    const AffineFit start{(hi - lo) / (static_cast<float>(nmax) + 0.1f * static_cast<float>(t)), -lo};
    AffineFit cand;
    double err;
    if (AffineCandidate(x, n, nmax, start, &cand, &err) && err < best_err) {
      best_err = err;
      best = cand;
    }
  }
  // Lloyd passes on the winner: reassign codes for its scale/offset and refit; never worse.
  for (int pass = 0; pass < 2; ++pass) {
    AffineFit cand;
    double err;
    if (!AffineCandidate(x, n, nmax, best, &cand, &err) || !(err < best_err)) break;
    best_err = err;
    best = cand;
  }
  return best;
}

double SymmetricAssign(const float* x, int n, float scale, int lo, int hi, int* L) {
  double err = 0.0;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = RoundClamp(x[i] * inv, lo, hi);
    const double diff = static_cast<double>(scale) * L[i] - x[i];
    err += diff * diff;
  }
  return err;
}

namespace {

// Codes for `scale`, then the least-squares scale for them; *gain = Sxl^2/Sl2 is how much that scale
// lowers the squared error below sum(x^2) (larger is better). Returns 0 when every code is 0.
float SymmetricCandidate(const float* x, int n, float scale, int lo, int hi, double* gain) {
  const float inv = 1.0f / scale;
  double sxl = 0, sl2 = 0;
  for (int i = 0; i < n; ++i) {
    const double l = RoundClamp(x[i] * inv, lo, hi);
    sxl += static_cast<double>(x[i]) * l;
    sl2 += l * l;
  }
  *gain = sl2 > 0 ? sxl * sxl / sl2 : 0.0;
  return sl2 > 0 ? static_cast<float>(sxl / sl2) : 0.0f;
}

}  // namespace

float FitSymmetric(const float* x, int n, int lo, int hi) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = max / static_cast<float>(lo);  // the extreme on the roomier negative side (code lo)
  double best_gain = -1.0;
  // Candidates put the extreme near code lo or near hi, swept around each, refit by least squares.
  for (const float target : {static_cast<float>(lo), static_cast<float>(hi)}) {
    for (int t = -10; t <= 10; ++t) {
      const float start = max / (target + std::copysign(0.1f * static_cast<float>(t), target));
      double gain;
      const float scale = SymmetricCandidate(x, n, start, lo, hi, &gain);
      if (scale != 0.0f && gain > best_gain) {
        best_gain = gain;
        best = scale;
      }
    }
  }
  for (int pass = 0; pass < 2; ++pass) {  // Lloyd passes on the winner
    double gain;
    const float scale = SymmetricCandidate(x, n, best, lo, hi, &gain);
    if (scale == 0.0f || !(gain > best_gain)) break;
    best_gain = gain;
    best = scale;
  }
  return best;
}

uint16_t SuperBlockStep(float max_scale, float limit) {
  if (max_scale == 0.0f) return 0;
  uint16_t h = F32ToFp16(ClampToHalfRange(max_scale / limit));
  const float d = Fp16ToF32(h);
  // fp16 is sign-magnitude (and F32ToFp16 keeps the sign of an underflow), so +1 is one spacing outward.
  if ((h & 0x7fff) < 0x7bff && (d == 0.0f || std::nearbyint(std::fabs(max_scale / d)) > std::fabs(limit))) {
    h = static_cast<uint16_t>(h + 1);
  }
  return h;
}

void CodeSubBlockK(const float* x, int n, int nmax, int code_max, float d, float dmin, AffineFit fit, uint8_t* sc,
                   uint8_t* mn, int* L) {
  const int sc0 = d > 0 ? RoundClamp(fit.scale / d, 0, code_max) : 0;
  const int m0 = dmin > 0 ? RoundClamp(fit.offset / dmin, 0, code_max) : 0;
  double best_err = INFINITY;
  int cand[32];
  for (const int s : {sc0, sc0 - 1, sc0 + 1}) {
    for (const int m : {m0, m0 - 1, m0 + 1}) {
      if (s < 0 || s > code_max || m < 0 || m > code_max) continue;
      const AffineFit coded{d * static_cast<float>(s), dmin * static_cast<float>(m)};
      const double err = AffineAssign(x, n, nmax, coded, cand);
      if (err < best_err || best_err == INFINITY) {
        best_err = err;
        *sc = static_cast<uint8_t>(s);
        *mn = static_cast<uint8_t>(m);
        std::memcpy(L, cand, sizeof(int) * static_cast<size_t>(n));
      }
    }
  }
}

namespace {

// ---- q4_K / q5_K ------------------------------------------------------------------------------------

// Quantizes one q4_K/q5_K super-block into codes L[256] (0..nmax) plus the header (d, dmin, scales).
void QuantK4K5Header(const float* x, int nmax, uint8_t* blk, int* L) {
  AffineFit fits[8];
  float max_scale = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < 8; ++j) {
    fits[j] = FitAffine(x + 32 * j, 32, nmax);
    max_scale = std::max(max_scale, fits[j].scale);
    max_offset = std::max(max_offset, fits[j].offset);
  }
  const uint16_t dh = SuperBlockStep(max_scale, 63.0f), mh = SuperBlockStep(max_offset, 63.0f);
  StoreHalf(blk, dh);
  StoreHalf(blk + 2, mh);
  // Code the sub-block scales against the fp16-rounded steps the decoder will actually use.
  const float d = Fp16ToF32(dh), dmin = Fp16ToF32(mh);
  uint8_t sc[8] = {}, mn[8] = {};
  for (int j = 0; j < 8; ++j) CodeSubBlockK(x + 32 * j, 32, nmax, 63, d, dmin, fits[j], &sc[j], &mn[j], L + 32 * j);
  PackScaleMinK4(sc, mn, blk + 4);
}

void PackNibblesK(const int* L, uint8_t* qs) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4));
}

// ---- q6_K -------------------------------------------------------------------------------------------

// Chooses the int8 code for one sub-block's scale (the rounded code first, then its neighbours) and its
// element codes (stored offset by +32, i.e. 0..63).
void CodeSubBlockQ6(const float* x, float d, float scale, int* sc, int* L) {
  const int s0 = d != 0.0f ? RoundClamp(scale / d, -128, 127) : 0;
  double best_err = INFINITY;
  int cand[16];
  for (const int s : {s0, s0 - 1, s0 + 1}) {
    if (s < -128 || s > 127) continue;
    const double err = SymmetricAssign(x, 16, d * static_cast<float>(s), -32, 31, cand);
    if (err < best_err || best_err == INFINITY) {
      best_err = err;
      *sc = s;
      for (int i = 0; i < 16; ++i) L[i] = cand[i] + 32;
    }
  }
}

void PackQ6(const int* L, uint8_t* ql, uint8_t* qh) {
  for (int h = 0; h < 2; ++h) {
    const int* q = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[64 * h + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
      ql[64 * h + 32 + l] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                            ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
    }
  }
}

void QuantQ6Block(const float* x, uint8_t* blk) {
  float scales[16];
  float max_scale = 0.0f;  // signed scale of largest magnitude
  for (int j = 0; j < 16; ++j) {
    scales[j] = FitSymmetric(x + 16 * j, 16, -32, 31);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  // The largest scale takes code -128, the end of the int8 range with the most room. An all-zero block
  // gets d = +0 (not -0) and zero scales.
  const uint16_t dh = SuperBlockStep(max_scale, -128.0f);
  const float d = Fp16ToF32(dh);
  int L[kQK_K];
  for (int j = 0; j < 16; ++j) {
    int sc = 0;  // always set: the rounded code is in range
    CodeSubBlockQ6(x + 16 * j, d, scales[j], &sc, L + 16 * j);
    blk[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc));  // two's complement int8
  }
  PackQ6(L, blk, blk + 128);
  StoreHalf(blk + 208, dh);
}

}  // namespace

void UnpackScaleMinK4(const uint8_t* packed, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

void PackScaleMinK4(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4));
  }
}

void DequantQ4_K(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 144, dst += kQK_K) DequantK4K5Block(src, nullptr, src + 16, dst);
}

void DequantQ5_K(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 176, dst += kQK_K) DequantK4K5Block(src, src + 16, src + 48, dst);
}

void DequantQ6_K(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 210, dst += kQK_K) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const uint8_t* sc = src + 192;  // int8 scales
    const float d = LoadHalf(src + 208);
    // e = 128h + 32k + l: low nibble k/2 of ql[64h + 32(k%2) + l], top bits 2k..2k+1 of qh[32h + l].
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t* lo_bytes = ql + 64 * h + 32 * (k % 2);
        const int lo_shift = 4 * (k / 2);
        float* y = dst + 128 * h + 32 * k;
        const float d0 = d * static_cast<float>(static_cast<int8_t>(sc[8 * h + 2 * k]));
        const float d1 = d * static_cast<float>(static_cast<int8_t>(sc[8 * h + 2 * k + 1]));
        for (int l = 0; l < 32; ++l) {
          const int q = ((lo_bytes[l] >> lo_shift) & 0xF) | (((qh[32 * h + l] >> (2 * k)) & 3) << 4);
          y[l] = (l < 16 ? d0 : d1) * static_cast<float>(q - 32);
        }
      }
    }
  }
}

void QuantQ4_K(const float* src, uint8_t* dst, size_t nblocks) {
  int L[kQK_K];
  for (size_t b = 0; b < nblocks; ++b, src += kQK_K, dst += 144) {
    QuantK4K5Header(src, 15, dst, L);
    PackNibblesK(L, dst + 16);
  }
}

void QuantQ5_K(const float* src, uint8_t* dst, size_t nblocks) {
  int L[kQK_K];
  for (size_t b = 0; b < nblocks; ++b, src += kQK_K, dst += 176) {
    QuantK4K5Header(src, 31, dst, L);
    uint8_t* qh = dst + 16;
    std::memset(qh, 0, 32);
    for (int e = 0; e < kQK_K; ++e) qh[e % 32] |= static_cast<uint8_t>(((L[e] >> 4) & 1) << (e / 32));
    PackNibblesK(L, dst + 48);
  }
}

void QuantQ6_K(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantQ6Block(src + b * kQK_K, dst + b * 210);
}

}  // namespace ember::quant_internal
