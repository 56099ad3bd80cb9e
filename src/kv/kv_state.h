// Per-sequence model memory: the one interface every cache shape goes through (style.md point 8).
//
// A KvState holds, for one sequence, the attention K/V of positions [0, n_pos()) for every attention
// layer, in fixed-size refcounted blocks (KvConfig::block_size positions each), and the recurrent state
// after those positions for every recurrent layer. Attention layers are grouped by state kind: one
// **block table per group**, and one block of a group holds all of that group's layers for its
// positions (docs/kv.md). A model with only full-attention layers has one group — every layer in every
// block, exactly the layout of format version 1. All recurrent layers share ONE block (not per
// position): each layer's state_floats float32 values at a fixed offset. Blocks are shared_ptrs:
//
//   * View(p) returns a new KvState sharing the blocks that cover [0, p) — zero copy.
//   * Writing into a block that another holder also references copies it first (copy-on-write), so a
//     donor's bytes never change, whatever its views do (and vice versa).
//   * A block is freed when its last holder (state, view, cache entry) lets go.
//
// Layer state kinds:
//   kFull    every position is kept; trimmable to any offset.
//   kWindow  sliding window W (gemma3 local layers). A query at p reads keys (p - W, p]. After each
//            Commit the group releases whole blocks that lie entirely before n_pos - W - window_margin,
//            so it holds at most W + margin (+ two partial blocks) positions whatever the sequence length.
//            held_from() is the first position still held; the state can be trimmed/viewed at p only if
//            p == n_pos or held_from() <= max(0, p - W) (docs/cache-spec.md §3.2, docs/sliding-window.md).
//   kRecurrent constant-size state (Qwen3.5's gated delta net: conv1d rolling state + delta-rule matrix),
//            state_floats float32 values per layer, opaque to KvState. Only the state after the last
//            position exists, so it cannot be rewound: trimmable/viewable only at p == n_pos (spec §3.3).
//            A fresh state's recurrent values are all zeros. StoreK/StoreV/KHead/VHead are never called
//            for a recurrent layer (checked: EMBER_CHECK).
//
// Writing protocol of the forward pass, for n new tokens:
//   Reserve(n);                            // allocate / copy-on-write blocks for [n_pos, n_pos + n), and
//                                          // make the recurrent block this state's own
//   StoreK/StoreV(layer, pos, row) ...     // attention layers: any pos in [n_pos, n_pos + n)
//   KHead/VHead(...)                       // read held positions while computing attention
//   RecurrentState(layer)                  // recurrent layers: update the state in place
//   Commit(n);                             // n_pos += n; window groups release what fell out of reach
// If the forward pass fails or is cancelled before Commit, the attention layers still describe
// [0, n_pos). The recurrent layers do not: they are updated in place with no rollback, so between
// Reserve and Commit their state is in flux. Callers therefore validate everything a pass needs before
// Reserve (RunBatch does), so a pass never fails half way. A state with recurrent layers left in flux
// (Reserve without Commit) refuses View, TrimTo and Serialize (FailedPrecondition) and CanTrimTo is
// false: a half-updated recurrent state never reaches the prompt cache or a file. Commit(n) must count
// exactly the positions the pass folded into the recurrent state.
//
// Thread-safety: one KvState is used by one thread at a time. Different KvStates sharing blocks may be
// used from different threads concurrently: shared blocks are only read, and are copied before a write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kv/byte_stream.h"
#include "util/status.h"

namespace ember {

// Element type of stored K/V. Values are the ggml type ids.
enum class KvDtype : uint8_t { kF32 = 0, kF16 = 1 };
const char* KvDtypeName(KvDtype t);
inline size_t KvDtypeBytes(KvDtype t) { return t == KvDtype::kF32 ? 4 : 2; }

enum class StateKind : uint8_t {
  kFull = 0,       // full causal attention: trimmable to any offset
  kWindow = 1,     // sliding window of `window` positions: trimmable while the needed positions are held
  kRecurrent = 2,  // constant-size recurrent/SSM state: viewable/trimmable only at n_pos
};
const char* StateKindName(StateKind k);

struct LayerStateSpec {
  StateKind kind = StateKind::kFull;
  int32_t window = 0;        // kWindow only
  int64_t state_floats = 0;  // kRecurrent only: float32 values of the layer's recurrent state (the model's
                             // conv-state + ssm-state floats; KvState treats them as one opaque array)
};

// Each recurrent layer's slice of the recurrent block starts at a multiple of this many floats (64
// bytes: the block itself is 64-byte aligned), so RecurrentState(layer) is SIMD-aligned.
inline constexpr int64_t kRecurrentAlignFloats = 16;

// The largest block (block_size positions of every layer, K and V) a KvConfig may describe, and the
// largest recurrent block (every recurrent layer's state). Real models are far below it (a 405B model in
// f32 with 256-position blocks: 264 MB); a geometry read from a file that exceeds it, or whose byte counts
// would wrap, is refused by Validate.
inline constexpr uint64_t kMaxKvBlockBytes = uint64_t{1} << 30;

struct KvConfig {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  KvDtype dtype = KvDtype::kF16;
  int32_t block_size = 32;            // positions per block
  // Per layer; empty means every layer is kFull. n_kv_head / head dims describe the attention (kFull,
  // kWindow) layers; they must be positive even when every layer is kRecurrent (then they size nothing).
  std::vector<LayerStateSpec> kinds;
  // kWindow layers keep this many positions beyond their window before releasing blocks, so a state
  // (a cache entry) can still be trimmed back by about this much. -1 (default): max(block_size, window / 4
  // rounded up to a block). Does not change any result; not part of the serialized geometry.
  int32_t window_margin = -1;

  // Every layer kFull with this geometry (the common case; tests and benches).
  static KvConfig Uniform(int32_t n_layer, int32_t n_kv_head, int32_t head_dim_k, int32_t head_dim_v,
                          KvDtype dtype, int32_t block_size) {
    KvConfig c;
    c.n_layer = n_layer;
    c.n_kv_head = n_kv_head;
    c.head_dim_k = head_dim_k;
    c.head_dim_v = head_dim_v;
    c.dtype = dtype;
    c.block_size = block_size;
    return c;
  }

  int64_t kv_dim_k() const { return int64_t{n_kv_head} * head_dim_k; }
  int64_t kv_dim_v() const { return int64_t{n_kv_head} * head_dim_v; }
  // Bytes of block_size positions of every attention layer, K and V (the one block of an all-kFull state;
  // with several groups, the sum of one block of each). Recurrent layers are not in it: block_bytes() /
  // block_size is the K/V cost of one position.
  size_t block_bytes() const;
  // Bytes of one position of one attention layer, K and V.
  size_t layer_position_bytes() const;
  // Whether any layer is kRecurrent.
  bool has_recurrent() const;
  // Bytes of the one recurrent block of a state: each recurrent layer's state_floats float32 values,
  // each slice rounded up to kRecurrentAlignFloats. 0 without recurrent layers. A constant per sequence.
  size_t recurrent_bytes() const;
  LayerStateSpec kind(int layer) const { return kinds.empty() ? LayerStateSpec{} : kinds[static_cast<size_t>(layer)]; }
  // The retained margin of a window layer of `window` positions (see window_margin).
  int64_t WindowMargin(int64_t window) const {
    if (window_margin >= 0) return window_margin;
    const int64_t quarter = (window / 4 + block_size - 1) / block_size * block_size;
    return quarter > block_size ? quarter : block_size;
  }
  Status Validate() const;
};

// One refcounted block. Layout: for each layer, K as [n_kv_head][block_size][head_dim_k] then V as
// [n_kv_head][block_size][head_dim_v] — head-major, so attention reads one head's keys contiguously.
class KvBlock {
 public:
  explicit KvBlock(size_t bytes);
  ~KvBlock();
  KvBlock(const KvBlock&) = delete;
  KvBlock& operator=(const KvBlock&) = delete;
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* data_;
  size_t bytes_;
};

class KvState {
 public:
  // A state of 0 positions (recurrent layers: all zeros; their block is allocated here). Errors:
  // InvalidArgument for a bad geometry.
  static StatusOr<KvState> Create(const KvConfig& config);

  KvState(KvState&&) noexcept = default;
  KvState& operator=(KvState&&) noexcept = default;
  KvState(const KvState&) = delete;  // sharing is explicit: View()
  KvState& operator=(const KvState&) = delete;

  const KvConfig& config() const { return config_; }
  int64_t n_pos() const { return n_pos_; }

  // ---- The memory interface the prompt cache relies on ----
  // Whether every layer can be cut back to p: 0 <= p <= n_pos, for each window layer p == n_pos or
  // held_from(layer) <= max(0, p - window), and with recurrent layers p == n_pos (and not in flux).
  bool CanTrimTo(int64_t p) const;
  // First position whose K/V `layer` still holds (0 for kFull; a multiple of block_size). A recurrent
  // layer holds only the state after the last position: n_pos.
  int64_t held_from(int layer) const;
  // Cuts to p, releasing blocks past it (TrimTo(n_pos) leaves the recurrent state as it is). Error (state
  // unchanged) if !CanTrimTo(p): InvalidArgument, FailedPrecondition while recurrent layers are in flux.
  Status TrimTo(int64_t p);
  // Earliest offset from which the retained state equals a fresh computation (0 for full attention).
  int64_t min_reusable_offset() const { return 0; }
  // A new state holding positions [0, p) of this one, sharing its blocks (no copy; the recurrent block
  // too). Error if !CanTrimTo(p), as TrimTo.
  StatusOr<KvState> View(int64_t p) const;
  // Bytes of the blocks this state references (shared blocks are counted by every holder), the
  // recurrent block included.
  size_t bytes() const;
  // Bytes of the blocks of the group holding `layer` (tests and accounting of window layers); for a
  // recurrent layer, the recurrent block (all recurrent layers).
  size_t group_bytes(int layer) const;
  // Calls fn(block identity, bytes) for each referenced block, so a caller can count shared bytes once.
  void ForEachBlock(const std::function<void(const void* id, size_t bytes)>& fn) const;
  // Held blocks over all groups, in ForEachBlock order (one group: block i covers positions from
  // i * block_size; the recurrent block, if any, comes last), and how many holders reference held
  // block i (tests, accounting).
  long BlockUseCount(size_t i) const;
  size_t n_blocks() const;
  // Bytes Reserve copied because a block was shared (copy-on-write) since this state was created,
  // viewed or deserialized — exact whatever the layer groups and released blocks.
  uint64_t cow_bytes_copied() const { return cow_bytes_copied_; }

  // ---- Forward-pass access ----
  // Makes positions [n_pos, n_pos + n) writable: allocates new blocks and copies a shared tail block;
  // with recurrent layers, copies the recurrent block if it is shared (copy-on-write, counted in
  // cow_bytes_copied) and puts it in flux until Commit.
  Status Reserve(int64_t n);
  // Converts a float row of n_kv_head * head_dim floats to the KV dtype and stores it at pos, which
  // must lie in the reserved range. Never called on a committed position, nor for a recurrent layer.
  void StoreK(int layer, int64_t pos, const float* row);
  void StoreV(int layer, int64_t pos, const float* row);
  void Commit(int64_t n);
  // One head's [block_size][head_dim] keys/values of block b (positions b*block_size ...), in the dtype.
  // The block must be held by the layer's group; `layer` must be an attention layer.
  const uint8_t* KHead(int layer, int64_t block, int kv_head) const;
  const uint8_t* VHead(int layer, int64_t block, int kv_head) const;
  // The state_floats float32 values of recurrent layer `layer` (64-byte aligned): the state after n_pos
  // positions, updated in place by the forward pass. The mutable pointer may be used only between
  // Reserve(n) and Commit(n) (Reserve made the block this state's own); both abort (EMBER_CHECK) for a
  // layer that is not kRecurrent, and the mutable one outside Reserve..Commit — so read a non-const
  // state outside a pass through the const overload (std::as_const(state).RecurrentState(layer)).
  float* RecurrentState(int layer);
  const float* RecurrentState(int layer) const;

  // ---- Serialization (same bytes for a RAM blob and an SSD file; format in kv/kv_format.h) ----
  // FailedPrecondition while recurrent layers are in flux (Reserve without Commit).
  Status Serialize(ByteSink& sink) const;
  // Reads a state written by Serialize. The stored geometry must equal `config` (errors name the field).
  static StatusOr<KvState> Deserialize(const KvConfig& config, ByteSource& source);

 private:
  // Attention layers of one state kind (and window) sharing a block table. Blocks [0, first) are
  // released (null). Recurrent layers are in no group (layer_group_ -1): they share recurrent_.
  struct Group {
    LayerStateSpec spec;
    std::vector<int32_t> layers;  // model layer ids, ascending
    size_t block_bytes = 0;
    int64_t first = 0;
    std::vector<std::shared_ptr<KvBlock>> blocks;  // indexed by absolute block number
  };

  explicit KvState(const KvConfig& config);
  size_t LayerOffset(int layer) const;  // within its group's block
  uint8_t* MutableHead(bool v, int layer, int64_t pos, int kv_head);
  const std::shared_ptr<KvBlock>* HeldBlock(size_t i) const;
  void Release();  // window groups: drop blocks entirely before n_pos - window - margin
  bool CanTrimGroupTo(const Group& g, int64_t p) const;
  Status TrimError(const char* what, int64_t p) const;  // why !CanTrimTo(p)
  bool IsRecurrent(int layer) const { return layer_group_[static_cast<size_t>(layer)] < 0; }
  // Serialization pieces (kv_serialize.cc): the recurrent block's floats, layer by layer, no padding.
  Status WriteRecurrent(ByteSink& sink) const;
  Status ReadRecurrent(ByteSource& source);
  Status ReadBlocks(ByteSource& source, int64_t n_pos);  // the attention groups' held blocks, after Reserve

  KvConfig config_;
  int64_t n_pos_ = 0;
  std::vector<Group> groups_;
  std::vector<int32_t> layer_group_;  // per layer: index into groups_; -1 for a recurrent layer
  std::vector<int32_t> layer_slot_;   // per layer: position within its group's block
  std::vector<int64_t> recurrent_offset_;  // per layer: first float of a recurrent layer's slice
  std::shared_ptr<KvBlock> recurrent_;     // the recurrent block; null without recurrent layers
  size_t recurrent_bytes_ = 0;             // config_.recurrent_bytes()
  bool in_flux_ = false;                   // recurrent layers between Reserve and Commit
  uint64_t cow_bytes_copied_ = 0;
};

}  // namespace ember
