// The model state a prompt-cache entry holds, seen through one interface whatever the architecture
// (style.md point 8). The cache never looks inside a state: it asks what each layer still holds and
// applies the trim rules of docs/cache-spec.md §3 itself (cache/trim_rules.h), so a state cannot claim a reuse
// the rules forbid.
//
// Implementations: KvEntryState (cache/kv_entry_state.h) over KvState; test-only kinds in tests/cache/.
//
// Contract for implementers:
//  * A state handed to the cache is immutable from then on. View() shares its buffers (no copy) and
//    must leave this state's bytes unchanged whatever the view's holder does with it later.
//  * Const methods may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kv/kv_state.h"
#include "util/status.h"

namespace ember {

// What one layer (or one group of layers with the same rule) retains.
struct LayerHold {
  StateKind kind = StateKind::kFull;
  // kWindow: positions of attention context a reuse at p needs: [p - window, p).
  int32_t window = 0;
  // Earliest position whose K/V (or state) this layer still holds. kFull and a block-design window that
  // keeps everything: 0. A ring that has wrapped: n_pos - ring size. kRecurrent: n_pos (only the
  // state after the last token exists).
  int64_t held_from = 0;
};

class EntryState {
 public:
  virtual ~EntryState() = default;

  // Positions forwarded into this state (the entry's token count).
  virtual int64_t n_pos() const = 0;
  // One description per layer (or per group of identical layers). Never empty.
  virtual std::vector<LayerHold> layers() const = 0;
  // Earliest offset from which the retained state equals what a fresh run computes (spec §3.4).
  virtual int64_t min_reusable_offset() const = 0;
  // Calls fn(identity, bytes) for every buffer the state references: state buffers and attachments.
  // Buffers shared between states report the same identity, so a holder of many states counts them once.
  virtual void ForEachBuffer(const std::function<void(const void* id, size_t bytes)>& fn) const = 0;
  // A state holding positions [0, p), sharing this one's buffers. Called only where the trim rules
  // allow p; an error means the implementation disagrees with the rules (the caller treats it as a bug
  // report, not a wrong answer: the candidate is skipped).
  virtual StatusOr<std::unique_ptr<EntryState>> View(int64_t p) const = 0;

  // Sum of ForEachBuffer (buffers shared with other states are counted here too).
  size_t bytes() const {
    size_t total = 0;
    ForEachBuffer([&](const void*, size_t b) { total += b; });
    return total;
  }
};

}  // namespace ember
