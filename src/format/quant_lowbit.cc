// The lower-bit K-quant super-blocks: q2_K and q3_K (256 elements, sixteen sub-blocks of 16).
//
// Layouts (bytes):
//   q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}                     84 bytes
//   q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}                 110 bytes
// Both keep element e's two low bits at bits 2k..2k+1 of qs[32h + l], with h = e/128, k = (e%128)/32,
// l = e%32; sub-block j = e/16.
// q2_K: value = (d * (scales[j] & 15)) * q - dmin * (scales[j] >> 4), q = 0..3 (affine, like q4_K).
// q3_K: value = (d * sc[j]) * (q - 4), where q's third bit is bit 4h + k of hmask[l] (so q - 4 is
// -4..3) and sc[j] is the six-bit scale minus 32 (quant_tables.h, UnpackQ3KScales).
//
// Quantization is ember's own search (not bit-identical to ggml), the q4_K/q6_K one of
// quant_kquants.cc with the sub-block size and code ranges of these formats: per sub-block a fitted
// scale (and min), the sub-block scales coded against an fp16 super-block step, each coded scale then
// nudged by +-1 when that lowers the sub-block's squared error.
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "format/quant_internal.h"
#include "format/quant_tables.h"

namespace ember::quant_internal {
namespace {

constexpr int kQK_K = 256;

// Byte and shift of element e's two low bits in qs, and the hmask bit (q3_K) of the same element.
inline int QsByte(int e) { return 32 * (e / 128) + e % 32; }
inline int QsShift(int e) { return 2 * ((e % 128) / 32); }
inline int HmaskBit(int e) { return 4 * (e / 128) + (e % 128) / 32; }

void QuantQ2Block(const float* x, uint8_t* blk) {
  AffineFit fits[16];
  float max_scale = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < 16; ++j) {
    fits[j] = FitAffine(x + 16 * j, 16, 3);
    max_scale = std::fmax(max_scale, fits[j].scale);
    max_offset = std::fmax(max_offset, fits[j].offset);
  }
  const uint16_t dh = SuperBlockStep(max_scale, 15.0f), mh = SuperBlockStep(max_offset, 15.0f);
  const float d = Fp16ToF32(dh), dmin = Fp16ToF32(mh);
  int L[kQK_K];
  for (int j = 0; j < 16; ++j) {
    uint8_t sc = 0, mn = 0;
    CodeSubBlockK(x + 16 * j, 16, 3, 15, d, dmin, fits[j], &sc, &mn, L + 16 * j);
    blk[j] = static_cast<uint8_t>(sc | (mn << 4));
  }
  uint8_t* qs = blk + 16;
  std::memset(qs, 0, 64);
  for (int e = 0; e < kQK_K; ++e) qs[QsByte(e)] |= static_cast<uint8_t>(L[e] << QsShift(e));
  StoreHalf(blk + 80, dh);
  StoreHalf(blk + 82, mh);
}

// The scale code (-32..31) of one q3_K sub-block, the rounded one first, then its neighbours; writes
// the element codes (-4..3) of the winner.
int CodeSubBlockQ3(const float* x, float d, float scale, int* L) {
  const int s0 = d != 0.0f ? RoundClamp(scale / d, -32, 31) : 0;
  double best_err = INFINITY;
  int best = s0;
  int cand[16];
  for (const int s : {s0, s0 - 1, s0 + 1}) {
    if (s < -32 || s > 31) continue;
    const double err = SymmetricAssign(x, 16, d * static_cast<float>(s), -4, 3, cand);
    if (err < best_err || best_err == INFINITY) {
      best_err = err;
      best = s;
      std::memcpy(L, cand, sizeof(cand));
    }
  }
  return best;
}

void PackQ3Scales(const int* sc, uint8_t* s) {
  std::memset(s, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const int v = sc[j] + 32;  // 0..63
    s[j < 8 ? j : j - 8] |= static_cast<uint8_t>((v & 15) << (j < 8 ? 0 : 4));
    s[8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
  }
}

void QuantQ3Block(const float* x, uint8_t* blk) {
  float scales[16];
  float max_scale = 0.0f;  // signed scale of largest magnitude
  for (int j = 0; j < 16; ++j) {
    scales[j] = FitSymmetric(x + 16 * j, 16, -4, 3);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  // The largest scale takes code -32, the end of the range with the most room (as q6_K's -128).
  const uint16_t dh = SuperBlockStep(max_scale, -32.0f);
  const float d = Fp16ToF32(dh);
  int L[kQK_K], sc[16];
  for (int j = 0; j < 16; ++j) sc[j] = CodeSubBlockQ3(x + 16 * j, d, scales[j], L + 16 * j);
  uint8_t* hmask = blk;
  uint8_t* qs = blk + 32;
  std::memset(blk, 0, 96);
  for (int e = 0; e < kQK_K; ++e) {
    const int u = L[e] + 4;  // 0..7
    qs[QsByte(e)] |= static_cast<uint8_t>((u & 3) << QsShift(e));
    hmask[e % 32] |= static_cast<uint8_t>((u >> 2) << HmaskBit(e));
  }
  PackQ3Scales(sc, blk + 96);
  StoreHalf(blk + 108, dh);
}

}  // namespace

void DequantQ2_K(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 84, dst += kQK_K) {
    const float d = LoadHalf(src + 80), dmin = LoadHalf(src + 82);
    const uint8_t* qs = src + 16;
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(src[j] & 0xF), ml = dmin * static_cast<float>(src[j] >> 4);
      for (int e = 16 * j; e < 16 * j + 16; ++e) {
        const int q = (qs[QsByte(e)] >> QsShift(e)) & 3;
        dst[e] = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

void DequantQ3_K(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += 110, dst += kQK_K) {
    const float d = LoadHalf(src + 108);
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    int8_t sc[16];
    quant_tables::UnpackQ3KScales(src + 96, sc);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(sc[j]);
      for (int e = 16 * j; e < 16 * j + 16; ++e) {
        const int q = ((qs[QsByte(e)] >> QsShift(e)) & 3) | (((hmask[e % 32] >> HmaskBit(e)) & 1) << 2);
        dst[e] = dl * static_cast<float>(q - 4);
      }
    }
  }
}

void QuantQ2_K(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantQ2Block(src + b * kQK_K, dst + b * 84);
}

void QuantQ3_K(const float* src, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) QuantQ3Block(src + b * kQK_K, dst + b * 110);
}

}  // namespace ember::quant_internal
