#include "kernels/repack.h"

#include <cstring>

#include "util/check.h"

namespace ember::kernels {
namespace {

// One field of a ggml block: `bytes` at `src` in the block. kHalf: a 2-byte fp16 (16 of them side by
// side when packed); kWords: a run of bytes split into 4-byte words, word k of the 16 rows as one
// 64-byte vector.
struct Field {
  enum Kind { kHalf, kWords } kind;
  uint32_t src;
  uint32_t bytes;
};

struct Layout {
  const Field* fields = nullptr;
  int n = 0;
};

constexpr Field kQ4_0[] = {{Field::kHalf, 0, 2}, {Field::kWords, 2, 16}};
constexpr Field kQ8_0[] = {{Field::kHalf, 0, 2}, {Field::kWords, 2, 32}};
constexpr Field kQ4_K[] = {{Field::kHalf, 0, 2}, {Field::kHalf, 2, 2}, {Field::kWords, 4, 12}, {Field::kWords, 16, 128}};
constexpr Field kQ5_K[] = {{Field::kHalf, 0, 2}, {Field::kHalf, 2, 2}, {Field::kWords, 4, 12}, {Field::kWords, 16, 32},
                           {Field::kWords, 48, 128}};
constexpr Field kQ6_K[] = {{Field::kHalf, 208, 2}, {Field::kWords, 192, 16}, {Field::kWords, 0, 128}, {Field::kWords, 128, 64}};

Layout LayoutOf(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return {kQ4_0, 2};
    case GgmlType::Q8_0: return {kQ8_0, 2};
    case GgmlType::Q4_K: return {kQ4_K, 4};
    case GgmlType::Q5_K: return {kQ5_K, 5};
    case GgmlType::Q6_K: return {kQ6_K, 4};
    default: return {};
  }
}

// Calls half(src, dst) for every fp16 and word(src, dst) for every 4-byte word of row r's block: the
// offsets in the row's block and in the group block a piece moves between. Constant piece sizes let
// the copies compile to plain loads and stores.
template <typename Half, typename Word>
void ForEachPiece(const Layout& l, int r, Half half, Word word) {
  uint32_t dst = 0;
  for (int i = 0; i < l.n; ++i) {
    const Field& fd = l.fields[i];
    if (fd.kind == Field::kHalf) {
      half(fd.src, dst + 2 * r);
      dst += 2 * kPackRows;
    } else {
      for (uint32_t k = 0; k < fd.bytes / 4; ++k) word(fd.src + 4 * k, dst + 64 * k + 4 * r);
      dst += fd.bytes / 4 * 64;
    }
  }
}

template <size_t N>
void Copy(uint8_t* dst, const uint8_t* src) {
  std::memcpy(dst, src, N);
}

}  // namespace

bool HasPackedLayout(GgmlType type) { return LayoutOf(type).n > 0; }

size_t PackedGroupBlockBytes(GgmlType type) { return kPackRows * static_cast<size_t>(TypeInfo(type).block_bytes); }

int64_t PackedGroups(const WeightView& w) { return HasPackedLayout(w.type) ? w.n_out / kPackRows : 0; }

uint64_t PackedBytes(const WeightView& w) {
  return static_cast<uint64_t>(PackedGroups(w)) * kPackRows * RowBytes(w.type, static_cast<uint64_t>(w.n_in));
}

void PackGroups(const WeightView& w, int64_t g0, int64_t g1, uint8_t* dst) {
  const Layout l = LayoutOf(w.type);
  EMBER_CHECK(l.n > 0 && 0 <= g0 && g0 <= g1 && g1 <= PackedGroups(w));
  const size_t bb = TypeInfo(w.type).block_bytes, gbb = PackedGroupBlockBytes(w.type);
  const int64_t nb = w.n_in / TypeInfo(w.type).block_elems;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* rows[kPackRows];
    for (int r = 0; r < kPackRows; ++r) rows[r] = w.data + static_cast<size_t>(g * kPackRows + r) * w.row_bytes;
    uint8_t* out = dst + static_cast<size_t>(g * nb) * gbb;
    // Written in order, field by field (the same places ForEachPiece names, in bulk).
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out + b * gbb;
      const size_t src = static_cast<size_t>(b) * bb;
      for (int i = 0; i < l.n; ++i) {
        const Field& fd = l.fields[i];
        if (fd.kind == Field::kHalf) {
          for (int r = 0; r < kPackRows; ++r) Copy<2>(o + 2 * r, rows[r] + src + fd.src);
          o += 2 * kPackRows;
          continue;
        }
        for (uint32_t k = 0; k < fd.bytes / 4; ++k, o += 64) {
          for (int r = 0; r < kPackRows; ++r) Copy<4>(o + 4 * r, rows[r] + src + fd.src + 4 * k);
        }
      }
    }
  }
}

void UnpackRow(const WeightView& w, const uint8_t* packed, int64_t row, uint8_t* out) {
  const Layout l = LayoutOf(w.type);
  EMBER_CHECK(l.n > 0 && 0 <= row && row < PackedGroups(w) * kPackRows);
  const size_t bb = TypeInfo(w.type).block_bytes, gbb = PackedGroupBlockBytes(w.type);
  const int64_t nb = w.n_in / TypeInfo(w.type).block_elems;
  const uint8_t* group = packed + static_cast<size_t>(row / kPackRows * nb) * gbb;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* o = out + b * bb;
    const uint8_t* g = group + b * gbb;
    ForEachPiece(l, static_cast<int>(row % kPackRows), [&](uint32_t s, uint32_t d) { Copy<2>(o + s, g + d); },
                 [&](uint32_t s, uint32_t d) { Copy<4>(o + s, g + d); });
  }
}

}  // namespace ember::kernels
