// The reuse rules of docs/cache-spec.md §3, applied by the cache to what an EntryState says it holds.
//
//   kFull       any p in [0, n_pos]: every position is held (held_from == 0).
//   kWindow     p == n_pos, or the positions a reuse at p attends to, [max(0, p - window), p), are still
//               held (held_from <= max(0, p - window)). Exact whatever the storage: a ring that wrapped
//               refuses, a block design that keeps a margin (or everything) allows.
//   kRecurrent  only p == n_pos: a recurrent state cannot be rewound; reuse elsewhere needs a checkpoint
//               entry stored at that offset.
//   any p       p >= min_reusable_offset (§3.4).
//   unknown     a kind not listed above is an error, never a fallback (§3.5).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "cache/entry_state.h"
#include "util/status.h"

namespace ember {

// InvalidArgument naming the layer if any layer has a kind these rules do not know.
Status ValidateStateKinds(const EntryState& state);

// Whether a view of `state` trimmed to p is a correct starting point for a request (see above).
// Error only for an unknown kind.
StatusOr<bool> CanServeAt(const EntryState& state, int64_t p);

// Whether the state can serve every offset in [min_reusable_offset, n_pos]: the precondition for
// superseding its ancestors (§2.4). Error only for an unknown kind.
StatusOr<bool> FullyTrimmable(const EntryState& state);

}  // namespace ember
