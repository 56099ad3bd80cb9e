#include "kernels/matmul.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/act_quant.h"
#include "kernels/dot_kernels.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemm_packed.h"
#include "kernels/gemm_tile.h"
#include "kernels/repack.h"

namespace ember::kernels {
namespace {

bool Supported(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
    case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0:
    case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

// Weight rows per cache block: a block of rows stays in L1/L2 while every token tile passes over it,
// and a token tile stays in L1 while it meets every row of the block.
constexpr int64_t kRowBlock = 16;

// Weight bytes per GEMM row block: with a 16-token activation tile (16 x n_in bytes plus scales) it
// stays within a 512 KiB L2 (Zen 3). Only a speed knob; 64..256 rows measured within noise here.
constexpr size_t kGemmBlockBytes = 192 << 10;

int64_t GemmRowBlock(size_t row_bytes) {
  const int64_t rows = static_cast<int64_t>(kGemmBlockBytes / row_bytes) / kGemmRows * kGemmRows;
  return std::clamp<int64_t>(rows, kGemmRows, 128);
}

// A row kernel and, where the weight type has them, the multi-row kernel and the packed one; all
// compute every (t, o) with the same operation sequence, so which one serves a pair is only a speed
// choice.
struct Kernels {
  DotFn dot = nullptr;
  GemmFn gemm = nullptr;
  PackedGemmFn packed = nullptr;
};

// Runs the unpacked kernels over rows [o0, o1) x all tokens. Each (t, o) goes through exactly one
// kernel call whose tile composition cannot change its result (dot_kernels.h, gemm_kernels.h), so the
// blocking is free to vary.
// `t_base`: the tokens are rows [t_base, t_base + n_tok) of `acts` (MatMulGrouped's groups).
void UnpackedRange(const Kernels& k, const WeightView& w, const ActBatch& acts, int64_t n_tok, int64_t o0,
                   int64_t o1, float* y, int64_t t_base = 0) {
  if (o0 >= o1) return;
  if (k.gemm != nullptr && n_tok >= 2) {
    // Whole groups of 8 rows, a block of them at a time: every token tile passes over the block's rows
    // (kept in L2) while the tile itself stays in L1/L2, instead of every 8 rows streaming all n_tok
    // tokens' activations in from L3.
    const int64_t g1 = o0 + (o1 - o0) / kGemmRows * kGemmRows;
    const int64_t block = GemmRowBlock(w.row_bytes);
    ActRow tile[kGemmMaxTile];
    for (int64_t ob = o0; ob < g1; ob += block) {
      const int64_t oe = std::min(g1, ob + block);
      for (int64_t t = 0; t < n_tok; t += kGemmMaxTile) {
        const int n = static_cast<int>(std::min<int64_t>(kGemmMaxTile, n_tok - t));
        for (int j = 0; j < n; ++j) tile[j] = acts.Row(t_base + t + j);
        for (int64_t o = ob; o < oe; o += kGemmRows) {
          k.gemm(w.data + o * w.row_bytes, w.row_bytes, w.n_in, tile, n, y + t * w.n_out + o, w.n_out);
        }
      }
    }
    o0 = g1;
    if (o0 >= o1) return;
  }
  ActRow tile[kMaxTile];
  for (int64_t ob = o0; ob < o1; ob += kRowBlock) {
    const int64_t oe = std::min(o1, ob + kRowBlock);
    for (int64_t t = 0; t < n_tok; t += kMaxTile) {
      const int n = static_cast<int>(std::min<int64_t>(kMaxTile, n_tok - t));
      for (int j = 0; j < n; ++j) tile[j] = acts.Row(t_base + t + j);
      for (int64_t o = ob; o < oe; ++o) {
        k.dot(w.data + o * w.row_bytes, w.n_in, tile, n, y + t * w.n_out + o, w.n_out);
      }
    }
  }
}

// Weight bytes per packed row block. Larger than kGemmBlockBytes: the tiles these kernels read are
// smaller per token, and on the AVX-512 machines measured (2 MiB L2) 384 KiB ran ~5% faster than 192.
constexpr size_t kPackedBlockBytes = 384 << 10;

// The packed kernel over 16-row groups [g0, g1) x all tokens, blocked like UnpackedRange's GEMM path:
// every token tile passes over a block of groups (~kPackedBlockBytes of weights, kept in L2), two
// groups per call.
void PackedRange(const Kernels& k, const WeightView& w, const GemmTiles& tiles, int64_t g0, int64_t g1, float* y) {
  const size_t group_bytes = static_cast<size_t>(kPackRows) * w.row_bytes;
  const int64_t block = std::clamp<int64_t>(static_cast<int64_t>(kPackedBlockBytes / group_bytes), 2, 16);
  for (int64_t gb = g0; gb < g1; gb += block) {
    const int64_t ge = std::min(g1, gb + block);
    for (int64_t i = 0; i < tiles.count(); ++i) {
      const GemmTile tile = tiles.Tile(i);
      const int64_t t = i * kGemmMaxTile;
      const int n = tiles.Tokens(i);
      for (int64_t g = gb; g < ge; g += kPackedMaxGroups) {
        const int groups = static_cast<int>(std::min<int64_t>(kPackedMaxGroups, ge - g));
        k.packed(w.packed + g * group_bytes, group_bytes, groups, w.n_in, tile, n, y + t * w.n_out + g * kPackRows,
                 w.n_out);
      }
    }
  }
}

// Rows [o0, o1) x all tokens: the whole 16-row groups inside the range from the packed copy when there
// is one (and tiles to feed it), the rest from the original rows.
void RowRange(const Kernels& k, const WeightView& w, const ActBatch& acts, const GemmTiles* tiles, int64_t n_tok,
              int64_t o0, int64_t o1, float* y) {
  if (k.packed != nullptr && w.packed != nullptr && tiles != nullptr) {
    const int64_t g0 = (o0 + kPackRows - 1) / kPackRows;
    const int64_t g1 = std::min(o1 / kPackRows, PackedGroups(w));
    if (g0 < g1) {
      UnpackedRange(k, w, acts, n_tok, o0, g0 * kPackRows, y);
      PackedRange(k, w, *tiles, g0, g1, y);
      UnpackedRange(k, w, acts, n_tok, g1 * kPackRows, o1, y);
      return;
    }
  }
  UnpackedRange(k, w, acts, n_tok, o0, o1, y);
}

// Output rows per dynamically claimed chunk: whole row blocks, about 8 chunks per thread, so a
// stalled thread (a busy machine, a preempted vCPU) delays ~1/8 of its share instead of the call.
int64_t RowChunk(int64_t rows, int threads) {
  const int64_t want = (rows + 8 * threads - 1) / (8 * threads);
  return (want + kRowBlock - 1) / kRowBlock * kRowBlock;
}


bool g_gemm_enabled = true;       // SetGemmEnabled
bool g_gemm_vnni_enabled = true;  // SetGemmVnniEnabled
bool g_packed_enabled = true;     // SetPackedGemmEnabled

// The one place MatMul and MatMulShared choose kernels. The GEMM kernels: the VNNI build under an
// avx512 ceiling where the CPU and type have one, else the AVX2 build under avx2 or avx512 (all
// bitwise equal to every tier's row kernel, so mixing them is safe).
Kernels PickKernels(GgmlType type) {
  Kernels k;
  k.dot = SelectDotFn(type, KernelCeiling());
  if (!g_gemm_enabled) return k;
  if (g_gemm_vnni_enabled && KernelCeiling() >= KernelTier::kAvx512) k.gemm = VnniGemmFn(type);
  if (k.gemm == nullptr && KernelCeiling() >= KernelTier::kAvx2) k.gemm = Avx2GemmFn(type);
  if (g_gemm_vnni_enabled && g_packed_enabled && PackedKernelAvailable(type)) k.packed = ZmmPackedGemmFn(type);
  return k;
}

// The tiles for the packed kernels, reused like ScratchActs.
GemmTiles& ScratchTiles() {
  thread_local GemmTiles tiles;
  return tiles;
}

// The activation buffer is reused across calls (owner thread only, like the pool) so steady-state
// decode does not allocate.
ActBatch& ScratchActs() {
  thread_local ActBatch acts;
  return acts;
}

}  // namespace

Status CheckWeight(const WeightView& w) {
  if (!Supported(w.type)) {
    return Unimplemented(std::string("matmul: weight type ") + GgmlTypeName(w.type) + " not supported");
  }
  const uint32_t be = TypeInfo(w.type).block_elems;
  if (w.n_in <= 0 || w.n_out <= 0 || w.n_in % be != 0) {
    return InvalidArgument("matmul: bad shape n_in=" + std::to_string(w.n_in) + " n_out=" +
                           std::to_string(w.n_out) + " for " + GgmlTypeName(w.type));
  }
  if (w.data == nullptr) return InvalidArgument("matmul: null weight data");
  if (w.row_bytes < RowBytes(w.type, static_cast<uint64_t>(w.n_in))) {
    return InvalidArgument("matmul: row_bytes " + std::to_string(w.row_bytes) + " < " +
                           std::to_string(RowBytes(w.type, static_cast<uint64_t>(w.n_in))));
  }
  return Status::Ok();
}

// EMBER_KERNELS, read once (on first use); an unknown value is reported and ignored.
KernelTier KernelCeiling() {
  static const KernelTier c = [] {
    const char* v = std::getenv("EMBER_KERNELS");
    const KernelTier t = ParseKernelCeiling(v);
    if (v != nullptr && t == KernelTier::kAvx512 && std::string_view(v) != "avx512") {
      std::fprintf(stderr, "ember: EMBER_KERNELS=%s ignored (expected scalar, avx2 or avx512)\n", v);
    }
    return t;
  }();
  return c;
}

KernelTier ParseKernelCeiling(const char* value) {
  const std::string_view v = value != nullptr ? value : "";
  if (v == "scalar") return KernelTier::kScalar;
  if (v == "avx2") return KernelTier::kAvx2;
  return KernelTier::kAvx512;
}

DotFn SelectDotFn(GgmlType type, KernelTier ceiling, KernelTier* tier) {
  KernelTier got = KernelTier::kScalar;
  DotFn fn = nullptr;
  if (ceiling >= KernelTier::kAvx512 && (fn = Avx512DotFn(type)) != nullptr) {
    got = KernelTier::kAvx512;
  } else if (ceiling >= KernelTier::kAvx2 && (fn = Avx2DotFn(type)) != nullptr) {
    got = KernelTier::kAvx2;
  } else {
    fn = ReferenceDotFn(type);
  }
  if (tier != nullptr) *tier = got;
  return fn;
}

void SetGemmEnabled(bool enabled) { g_gemm_enabled = enabled; }
void SetGemmVnniEnabled(bool enabled) { g_gemm_vnni_enabled = enabled; }
void SetPackedGemmEnabled(bool enabled) { g_packed_enabled = enabled; }

bool PackedKernelAvailable(GgmlType type) {
  return KernelCeiling() >= KernelTier::kAvx512 && ZmmPackedGemmFn(type) != nullptr;
}

const char* MatMulBackendName() {
  KernelTier tier;
  SelectDotFn(GgmlType::Q8_0, KernelCeiling(), &tier);
  switch (tier) {
    case KernelTier::kAvx512: return "avx512";
    case KernelTier::kAvx2: return "avx2";
    default: return "scalar";
  }
}

void MatMul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  const MatMulOut out{&w, y};
  MatMulShared(&out, 1, x, n_tok, pool);
}

void MatMulShared(const MatMulOut* outs, int count, const float* x, int64_t n_tok, ThreadPool& pool) {
  if (n_tok <= 0 || count <= 0) return;
  constexpr int kMaxShared = 4;
  bool shared = count <= kMaxShared;
  for (int i = 1; i < count && shared; ++i) {
    shared = DotTypeOf(outs[i].w->type) == DotTypeOf(outs[0].w->type) && outs[i].w->n_in == outs[0].w->n_in;
  }
  if (!shared) {
    for (int i = 0; i < count; ++i) MatMul(*outs[i].w, x, n_tok, outs[i].y, pool);
    return;
  }
  Kernels fns[kMaxShared];
  int64_t first_row[kMaxShared + 1] = {0};  // outs[i] owns global rows [first_row[i], first_row[i+1])
  bool packed = false;
  for (int i = 0; i < count; ++i) {
    fns[i] = PickKernels(outs[i].w->type);
    first_row[i + 1] = first_row[i] + outs[i].w->n_out;
    packed |= fns[i].packed != nullptr && outs[i].w->packed != nullptr;
  }
  ActBatch& acts = ScratchActs();
  const DotType dot = DotTypeOf(outs[0].w->type);
  acts.Resize(dot, n_tok, outs[0].w->n_in);
  // Quantize each activation row once per call; rows are independent, so splitting them is free. With
  // packed weights each thread also lays out the tiles of its rows.
  GemmTiles* tiles = nullptr;
  if (packed && GemmTiles::Supports(dot)) {
    tiles = &ScratchTiles();
    tiles->Resize(dot, n_tok, outs[0].w->n_in);
    pool.ParallelFor(tiles->count(), [&](int64_t i0, int64_t i1, int) {
      for (int64_t i = i0; i < i1; ++i) {
        acts.ConvertRows(x, i * kGemmMaxTile, i * kGemmMaxTile + tiles->Tokens(i));
        tiles->Build(i, acts);
      }
    });
  } else {
    pool.ParallelFor(n_tok, [&](int64_t t0, int64_t t1, int) { acts.ConvertRows(x, t0, t1); });
  }
  const auto rows = [&](int64_t r0, int64_t r1, int) {
    for (int i = 0; i < count; ++i) {  // this thread's global rows, cut at the weights' boundaries
      const int64_t b = std::max(r0, first_row[i]), e = std::min(r1, first_row[i + 1]);
      if (b < e) RowRange(fns[i], *outs[i].w, acts, tiles, n_tok, b - first_row[i], e - first_row[i], outs[i].y);
    }
  };
  if (n_tok <= kMaxTile) {
    // Decode (a few tokens): a pure weight stream, so the threads should finish together; guided
    // chunks end within one 16-row block of each other, where ~8 fixed chunks per thread left one
    // thread idle for half a chunk (~3% of the call with 2 threads) on average.
    pool.ParallelForGuided(first_row[count], kRowBlock, rows);
  } else {
    pool.ParallelForChunks(first_row[count], RowChunk(first_row[count], pool.size()), rows);
  }
}

void MatMulReference(const WeightView& w, const float* x, int64_t n_tok, float* y) {
  if (n_tok <= 0) return;
  ActBatch acts;
  acts.Convert(DotTypeOf(w.type), x, n_tok, w.n_in);
  const DotFn fn = ReferenceDotFn(w.type);
  for (int64_t t = 0; t < n_tok; ++t) {
    const ActRow row = acts.Row(t);
    for (int64_t o = 0; o < w.n_out; ++o) fn(w.data + o * w.row_bytes, w.n_in, &row, 1, &y[t * w.n_out + o], 1);
  }
}

void MatMulGrouped(const MatMulGroup* groups, int count, const float* x, int64_t n_rows, ThreadPool& pool) {
  if (count <= 0 || n_rows <= 0) return;
  bool shared = groups[0].w->packed == nullptr;  // a packed weight's original rows may be unmapped
  for (int i = 1; i < count && shared; ++i) {
    shared = DotTypeOf(groups[i].w->type) == DotTypeOf(groups[0].w->type) && groups[i].w->n_in == groups[0].w->n_in &&
             groups[i].w->packed == nullptr;
  }
  const int64_t n_in = groups[0].w->n_in;
  if (!shared) {
    for (int i = 0; i < count; ++i) MatMul(*groups[i].w, x + groups[i].t0 * n_in, groups[i].n_tok, groups[i].y, pool);
    return;
  }
  // Reused per calling thread; bound to locals because the workers' lambda would otherwise name their
  // own thread_local instances.
  thread_local std::vector<Kernels> fns_tl;
  thread_local std::vector<int64_t> first_row_tl;
  std::vector<Kernels>& fns = fns_tl;
  std::vector<int64_t>& first_row = first_row_tl;  // groups[i] owns global rows [first_row[i], first_row[i+1])
  fns.resize(static_cast<size_t>(count));
  first_row.assign(static_cast<size_t>(count) + 1, 0);
  int64_t max_tok = 0;
  for (int i = 0; i < count; ++i) {
    fns[static_cast<size_t>(i)] = PickKernels(groups[i].w->type);
    first_row[static_cast<size_t>(i) + 1] = first_row[static_cast<size_t>(i)] + groups[i].w->n_out;
    max_tok = std::max(max_tok, groups[i].n_tok);
  }
  ActBatch& acts = ScratchActs();
  acts.Resize(DotTypeOf(groups[0].w->type), n_rows, n_in);
  pool.ParallelFor(n_rows, [&](int64_t t0, int64_t t1, int) { acts.ConvertRows(x, t0, t1); });
  const auto rows = [&](int64_t r0, int64_t r1, int) {
    // This thread's global rows, cut at the groups' boundaries (first_row is ascending: a binary search
    // finds the first group, then the range walks forward).
    size_t i = static_cast<size_t>(std::upper_bound(first_row.begin(), first_row.end(), r0) - first_row.begin()) - 1;
    for (; i < static_cast<size_t>(count) && first_row[i] < r1; ++i) {
      const MatMulGroup& g = groups[i];
      const int64_t b = std::max(r0, first_row[i]), e = std::min(r1, first_row[i + 1]);
      if (b < e && g.n_tok > 0) UnpackedRange(fns[i], *g.w, acts, g.n_tok, b - first_row[i], e - first_row[i], g.y, g.t0);
    }
  };
  const int64_t total = first_row[static_cast<size_t>(count)];
  if (max_tok <= kMaxTile) {
    pool.ParallelForGuided(total, kRowBlock, rows);
  } else {
    pool.ParallelForChunks(total, RowChunk(total, pool.size()), rows);
  }
}

}  // namespace ember::kernels
