// Per-sequence model memory: the one interface every cache shape goes through (style.md point 8).
//
// A KvState holds, for one sequence, the attention K/V of positions [0, n_pos()) for every layer, in
// fixed-size refcounted blocks (KvConfig::block_size positions each; one block holds all layers of
// those positions — see docs/kv.md for the trade-off). The block table is a vector of shared_ptrs:
//
//   * View(p) returns a new KvState sharing the first ceil(p / block_size) blocks — zero copy.
//   * Writing into a block that another holder also references copies it first (copy-on-write), so a
//     donor's bytes never change, whatever its views do (and vice versa).
//   * A block is freed when its last holder (state, view, cache entry) lets go.
//
// Layer state kinds: kFull (works), kWindow and kRecurrent (declared so the prompt cache can be written
// against their trim rules now; Create() refuses them with Unimplemented — never a silent fallback).
//
// Writing protocol of the forward pass, for n new tokens:
//   Reserve(n);                            // allocate / copy-on-write blocks for [n_pos, n_pos + n)
//   StoreK/StoreV(layer, pos, row) ...     // any pos in [n_pos, n_pos + n)
//   KHead/VHead(...)                       // read positions [0, n_pos + n) while computing attention
//   Commit(n);                             // n_pos += n
// If the forward pass fails or is cancelled before Commit, the state still describes [0, n_pos).
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
  kWindow = 1,     // sliding window of `window` positions (declared, not implemented)
  kRecurrent = 2,  // constant-size recurrent/SSM state: never trimmable (declared, not implemented)
};
const char* StateKindName(StateKind k);

struct LayerStateSpec {
  StateKind kind = StateKind::kFull;
  int32_t window = 0;  // kWindow only
};

struct KvConfig {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  KvDtype dtype = KvDtype::kF16;
  int32_t block_size = 32;            // positions per block
  std::vector<LayerStateSpec> kinds;  // per layer; empty means every layer is kFull

  int64_t kv_dim_k() const { return int64_t{n_kv_head} * head_dim_k; }
  int64_t kv_dim_v() const { return int64_t{n_kv_head} * head_dim_v; }
  // Bytes of one block: all layers, K and V, block_size positions.
  size_t block_bytes() const;
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
  // Errors: InvalidArgument for a bad geometry; Unimplemented for kWindow/kRecurrent layers.
  static StatusOr<KvState> Create(const KvConfig& config);

  KvState(KvState&&) noexcept = default;
  KvState& operator=(KvState&&) noexcept = default;
  KvState(const KvState&) = delete;  // sharing is explicit: View()
  KvState& operator=(const KvState&) = delete;

  const KvConfig& config() const { return config_; }
  int64_t n_pos() const { return n_pos_; }

  // ---- The memory interface the prompt cache relies on ----
  // Whether every layer can be cut back to p (full attention: any 0 <= p <= n_pos).
  bool CanTrimTo(int64_t p) const;
  // Cuts to p, releasing blocks past it. Error (state unchanged) if !CanTrimTo(p).
  Status TrimTo(int64_t p);
  // Earliest offset from which the retained state equals a fresh computation (0 for full attention).
  int64_t min_reusable_offset() const { return 0; }
  // A new state holding positions [0, p) of this one, sharing its blocks (no copy). Error if !CanTrimTo(p).
  StatusOr<KvState> View(int64_t p) const;
  // Bytes of the blocks this state references (shared blocks are counted by every holder).
  size_t bytes() const { return blocks_.size() * config_.block_bytes(); }
  // Calls fn(block identity, bytes) for each referenced block, so a caller can count shared bytes once.
  void ForEachBlock(const std::function<void(const void* id, size_t bytes)>& fn) const;
  // How many holders reference block i (tests, accounting).
  long BlockUseCount(size_t i) const { return blocks_[i].use_count(); }
  size_t n_blocks() const { return blocks_.size(); }

  // ---- Forward-pass access ----
  // Makes positions [n_pos, n_pos + n) writable: allocates new blocks and copies a shared tail block.
  Status Reserve(int64_t n);
  // Converts a float row of n_kv_head * head_dim floats to the KV dtype and stores it at pos, which
  // must lie in the reserved range. Never called on a committed position.
  void StoreK(int layer, int64_t pos, const float* row);
  void StoreV(int layer, int64_t pos, const float* row);
  void Commit(int64_t n) { n_pos_ += n; }
  // One head's [block_size][head_dim] keys/values of block b (positions b*block_size ...), in the dtype.
  const uint8_t* KHead(int layer, int64_t block, int kv_head) const;
  const uint8_t* VHead(int layer, int64_t block, int kv_head) const;

  // ---- Serialization (same bytes for a RAM blob and an SSD file; format in kv/kv_format.h) ----
  Status Serialize(ByteSink& sink) const;
  // Reads a state written by Serialize. The stored geometry must equal `config` (errors name the field).
  static StatusOr<KvState> Deserialize(const KvConfig& config, ByteSource& source);

 private:
  explicit KvState(const KvConfig& config) : config_(config) {}
  size_t LayerOffset(int layer) const;
  uint8_t* MutableHead(bool v, int layer, int64_t pos, int kv_head);

  KvConfig config_;
  int64_t n_pos_ = 0;
  int64_t reserved_ = 0;  // positions [0, reserved_) have writable-or-shared blocks allocated
  std::vector<std::shared_ptr<KvBlock>> blocks_;
};

}  // namespace ember
