// KvState as a prompt-cache entry state.
//
// Per-layer holds come from the KvConfig's layer kinds. KvState keeps every block of every layer for
// the whole sequence (no ring), so a kWindow layer holds from 0 and stays trimmable to any offset: the
// "block design with a margin" of spec §3.2 with an unbounded margin — chosen because the block table
// already exists and cutting it is free, where a ring would make every wrapped entry unusable for a
// next turn that drifts by one token. (KvState does not run window layers yet; when it frees blocks
// outside the window it must report held_from here, and the trim rules stay exact.)
//
// Thread-safety: const methods from any thread; the wrapped state is not modified after construction.
#pragma once

#include <memory>

#include "cache/entry_state.h"
#include "kv/kv_state.h"

namespace ember {

class KvEntryState final : public EntryState {
 public:
  explicit KvEntryState(KvState kv) : kv_(std::move(kv)) {}

  const KvState& kv() const { return kv_; }
  // The state, leaving this object empty (for a request adopting a view).
  KvState Take() && { return std::move(kv_); }

  int64_t n_pos() const override { return kv_.n_pos(); }
  std::vector<LayerHold> layers() const override;
  int64_t min_reusable_offset() const override { return kv_.min_reusable_offset(); }
  void ForEachBuffer(const std::function<void(const void* id, size_t bytes)>& fn) const override {
    kv_.ForEachBlock(fn);
  }
  StatusOr<std::unique_ptr<EntryState>> View(int64_t p) const override;

 private:
  KvState kv_;
};

// A view of `kv` at offset p (p <= kv.n_pos()), wrapped for the cache: zero copy.
StatusOr<std::unique_ptr<EntryState>> SnapshotKv(const KvState& kv, int64_t p);

}  // namespace ember
