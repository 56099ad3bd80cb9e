// Per-block pieces of one attention head (model/attention.cc), fused and inlined so that the per-key
// work is one call per KV block instead of two per key. Bitwise identical to the primitives of ops.h
// they replace, in the same order:
//   AttnScores*  : sc[j] = Dot*(k_j, q) * scale   (DotF16F16 with q already rounded to fp16 / DotF32)
//   AttnAccum    : out[i] = fma(p[j], f32(v_j[i]), out[i]) for j ascending (AxpyF16 / AxpyF32)
// so a result never depends on how keys are split into blocks or calls (batch invariance).
#pragma once

#include <cstdint>

namespace ember::kernels {

// Prepared query of one head: q16 = fp16(q) (RoundToF16) and qf[i] = f32(q16[i]), hd elements each.
void AttnPrepareQueryF16(const float* q, int hd, uint16_t* q16, float* qf);

// sc[j] = DotF16F16(k + j*hd, q16, hd) * scale for j in [0, n); k is fp16 [n][hd]. qf from
// AttnPrepareQueryF16.
void AttnScoresF16(const uint16_t* k, const uint16_t* q16, const float* qf, int hd, int64_t n, float scale,
                   float* sc);
// sc[j] = DotF32(k + j*hd, q, hd) * scale for j in [0, n); k is f32 [n][hd].
void AttnScoresF32(const float* k, const float* q, int hd, int64_t n, float scale, float* sc);

// For j = 0 .. n-1 in order: AxpyF16(p[j], v + j*hv, out, hv) / AxpyF32(p[j], v + j*hv, out, hv).
void AttnAccumF16(const float* p, const uint16_t* v, int hv, int64_t n, float* out);
void AttnAccumF32(const float* p, const float* v, int hv, int64_t n, float* out);

// One kv head's keys and values, stored in blocks of block_size positions: block(ctx, v, b) returns
// block b's [block_size][head_dim_k] keys (v = false) or [block_size][head_dim_v] values (v = true),
// f16 or f32 per `f16`, for every block AttendHead touches.
struct AttnKvHead {
  int head_dim_k = 0;
  int head_dim_v = 0;
  int64_t block_size = 0;
  bool f16 = true;
  const void* ctx = nullptr;
  const uint8_t* (*block)(const void* ctx, bool v, int64_t b) = nullptr;
};

// One query head q [head_dim_k] at position n_keys - 1 against keys [k0, n_keys) in position order:
// scores = (k_j · q) * scale, Softmax, out [head_dim_v] = Σ_j p_j v_j — with an F16 cache q and p
// rounded to fp16 first (ops.h). Bitwise the same as doing it key by key with RoundToF16, DotF16F16 /
// DotF32, Softmax, RoundToF16 and AxpyF16 / AxpyF32. Scratch: scores [n_keys - k0] floats, half
// [head_dim_k] halves.
void AttendHead(const AttnKvHead& kv, const float* q, int64_t k0, int64_t n_keys, float scale, float* scores,
                uint16_t* half, float* out);

// One query of AttendHeads: q [head_dim_k] against keys [k0, n_keys) of the shared kv head, with its
// own scratch (scores [n_keys - k0] floats, half [head_dim_k] halves) and out [head_dim_v].
struct AttnQuery {
  const float* q = nullptr;
  int64_t k0 = 0, n_keys = 0;
  float* scores = nullptr;
  uint16_t* half = nullptr;
  float* out = nullptr;
};

// AttendHead for several queries of one kv head (the heads of a GQA group, consecutive tokens of a
// prefill): each KV block is visited once for all of them while it is in L1, instead of once per
// query; an F16 block two or more queries see is widened to f32 once for all of them, and V is
// accumulated for pairs of queries sharing each loaded vector. Each query's results are bitwise
// those of its own AttendHead call — per query the same operations on the same values in the same
// order; only the interleaving between queries changes.
void AttendHeads(const AttnKvHead& kv, const AttnQuery* queries, int n_queries, float scale);

// On (the default) AttendHeads and Softmax use the AVX-512 kernels where the CPU runs them and
// EMBER_KERNELS allows (attention_avx512.h); off, the AVX2 ones. Bitwise the same results either way:
// for in-process comparisons (kernels_bench --attention, tests). Not thread-safe: set it while no
// attention runs.
void SetAttentionAvx512Enabled(bool enabled);

// Tokens per AttendHeads tile for GQA groups of `group` query heads whose queries see up to `keys`
// keys: ~48 queries per pass over a kv head's blocks (each block then read from memory, and an F16
// one widened, once per 48 queries; 33-48 measured ~1.4x faster than 15 at 8k keys), fewer at long
// contexts so that a tile's scores stay within ~2 MiB (the caller's scratch, per thread). At least 1.
int64_t AttnTileTokens(int64_t group, int64_t keys);

}  // namespace ember::kernels
