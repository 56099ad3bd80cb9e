// Activations of a tile of tokens in the block-major order the packed GEMM kernels read (gemm_packed.h).
// Internal to kernels/.
//
// ActBatch keeps each token's quants contiguous (what a row kernel wants). A packed kernel instead
// walks the weight blocks and, per block, every token of its tile; so a tile here stores block b of its
// kGemmMaxTile token slots side by side, with the per-(block, token) scalars the kernels need
// precomputed once per MatMul call (not once per 16 weight rows):
//   * 32-element blocks (kQ8_0): the block's scale, and its quant sum times the two offsets the packed
//     types use, negated (Q4_0's weights are q - 8; Q8_0's go into vpdpbusd as w + 128).
//   * 256-element super-blocks (kQ8_K): the scale, and the per-16 sums as int16 pairs, both per 32
//     (Q4_K's mins) and per 16 (Q6_K's -32 offset), ready for vpdpwssd.
// Values are copies, never rounded: a kernel reading a tile computes the same integers as from ActRows.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/act_quant.h"
#include "kernels/gemm_kernels.h"

namespace ember::kernels {

// One tile; index [b * kGemmMaxTile + t] for block b, token slot t (slots >= the tile's tokens unset).
struct GemmTile {
  // 32-element part p of block b of token slot t: q + ((b * P + p) * kGemmMaxTile + t) * 32, P =
  // block_elems / 32 (so a kernel walking a block's parts finds the tile's 16 tokens side by side).
  const int8_t* q = nullptr;
  const float* d = nullptr;         // block scale
  const int32_t* off8 = nullptr;    // kQ8_0: -8 * sum(q)
  const int32_t* off128 = nullptr;  // kQ8_0: -128 * sum(q)
  const int32_t* pair32 = nullptr;  // kQ8_K: [... * 4 + p] = int16 pair (S_2p, S_2p+1), S_j = sum of 32-part j
  const int32_t* pair16 = nullptr;  // kQ8_K: [... * 8 + i] = int16 pair (sum of 16-group 2i, 2i+1)
};

// The tiles of one MatMul call: tokens [16 i, 16 i + 16) form tile i.
class GemmTiles {
 public:
  // Sizes the tiles for n_tok tokens of n_in activations of `type` (kQ8_0 or kQ8_K); owner thread.
  void Resize(DotType type, int64_t n_tok, int64_t n_in);
  // Fills tile i from its tokens' rows (rows[t] = token 16 i + t, for the tile's tokens); tiles are
  // independent (threads may build different ones).
  void Build(int64_t i, const ActRow* rows);
  // Build from a converted batch (its rows 16 i ..).
  void Build(int64_t i, const ActBatch& acts);
  // Tokens of tile i.
  int Tokens(int64_t i) const;
  int64_t count() const { return tiles_; }
  GemmTile Tile(int64_t i) const;

  // Whether packed kernels can read this dot type.
  static bool Supports(DotType type) { return type == DotType::kQ8_0 || type == DotType::kQ8_K; }

 private:
  DotType type_ = DotType::kF32;
  int64_t n_tok_ = 0, tiles_ = 0, blocks_ = 0, block_elems_ = 0;
  std::vector<int8_t> q_;
  std::vector<float> d_;
  std::vector<int32_t> a_, b_;  // kQ8_0: off8, off128; kQ8_K: pair32, pair16
};

}  // namespace ember::kernels
