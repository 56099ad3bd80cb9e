#include "kernels/gemm_tile.h"

#include <algorithm>
#include <cstring>

#include "util/check.h"

namespace ember::kernels {
namespace {

// Two int16 values in one int32: lo in the low half.
int32_t Pair(int32_t lo, int32_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

}  // namespace

void GemmTiles::Resize(DotType type, int64_t n_tok, int64_t n_in) {
  EMBER_CHECK(Supports(type));
  type_ = type;
  n_tok_ = n_tok;
  tiles_ = (n_tok + kGemmMaxTile - 1) / kGemmMaxTile;
  block_elems_ = type == DotType::kQ8_K ? 256 : 32;
  blocks_ = n_in / block_elems_;
  const size_t slots = static_cast<size_t>(tiles_ * blocks_ * kGemmMaxTile);
  // resize() never shrinks capacity: a long-lived GemmTiles stops allocating after the first prefill.
  q_.resize(slots * static_cast<size_t>(block_elems_));
  d_.resize(slots);
  a_.resize(slots * (type == DotType::kQ8_K ? 4 : 1));
  b_.resize(slots * (type == DotType::kQ8_K ? 8 : 1));
}

int GemmTiles::Tokens(int64_t i) const {
  return static_cast<int>(std::min<int64_t>(kGemmMaxTile, n_tok_ - i * kGemmMaxTile));
}

void GemmTiles::Build(int64_t i, const ActRow* rows) {
  const size_t base = static_cast<size_t>(i * blocks_ * kGemmMaxTile);
  for (int t = 0; t < Tokens(i); ++t) {
    const ActRow& r = rows[t];
    for (int64_t b = 0; b < blocks_; ++b) {
      const size_t s = base + static_cast<size_t>(b * kGemmMaxTile + t);
      // 32-element part p of the block: the tile's 16 tokens' parts p are side by side.
      for (int64_t p = 0; p < block_elems_ / 32; ++p) {
        std::memcpy(&q_[((base + static_cast<size_t>(b * kGemmMaxTile)) * block_elems_ / 32 + p * kGemmMaxTile + t) * 32],
                    r.q + b * block_elems_ + 32 * p, 32);
      }
      d_[s] = r.d[b];
      if (type_ == DotType::kQ8_K) {
        const int32_t* g = r.sum + b * 16;  // the super-block's per-16 sums
        for (int p = 0; p < 4; ++p) a_[s * 4 + p] = Pair(g[4 * p] + g[4 * p + 1], g[4 * p + 2] + g[4 * p + 3]);
        for (int k = 0; k < 8; ++k) b_[s * 8 + k] = Pair(g[2 * k], g[2 * k + 1]);
      } else {
        a_[s] = -8 * r.sum[b];
        b_[s] = -128 * r.sum[b];
      }
    }
  }
}

void GemmTiles::Build(int64_t i, const ActBatch& acts) {
  ActRow rows[kGemmMaxTile];
  for (int t = 0; t < Tokens(i); ++t) rows[t] = acts.Row(i * kGemmMaxTile + t);
  Build(i, rows);
}

GemmTile GemmTiles::Tile(int64_t i) const {
  const size_t base = static_cast<size_t>(i * blocks_ * kGemmMaxTile);
  GemmTile t;
  t.q = q_.data() + base * static_cast<size_t>(block_elems_);
  t.d = d_.data() + base;
  if (type_ == DotType::kQ8_K) {
    t.pair32 = a_.data() + base * 4;
    t.pair16 = b_.data() + base * 8;
  } else {
    t.off8 = a_.data() + base;
    t.off128 = b_.data() + base;
  }
  return t;
}

}  // namespace ember::kernels
