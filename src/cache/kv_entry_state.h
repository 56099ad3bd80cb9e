// KvState as a prompt-cache entry state.
//
// Per-layer holds come from the KvConfig's layer kinds and the state itself: kFull layers hold from 0;
// a kWindow layer reports KvState::held_from(layer), the first position its group still holds. KvState
// keeps a window layer's blocks for window + window_margin positions behind the newest one and releases
// older blocks (docs/sliding-window.md), so the trim rules (cache/trim_rules.h) see exactly what is left:
// an entry whose window has moved on past a candidate offset refuses it and the lookup moves on. A
// kRecurrent layer reports n_pos (KvState holds only the state after the last position), so such an
// entry serves only prompts that extend it whole; views share its recurrent block, copied on write.
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
