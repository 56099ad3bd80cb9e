#include "cache/kv_entry_state.h"

namespace ember {

std::vector<LayerHold> KvEntryState::layers() const {
  const KvConfig& c = kv_.config();
  if (c.kinds.empty()) return {LayerHold{StateKind::kFull, 0, 0}};  // one group: every layer full
  std::vector<LayerHold> out;
  out.reserve(c.kinds.size());
  for (int32_t l = 0; l < c.n_layer; ++l) {
    const LayerStateSpec& s = c.kinds[static_cast<size_t>(l)];
    // Recurrent layers hold only the state after the last token; attention layers what KvState kept.
    out.push_back(LayerHold{s.kind, s.window, s.kind == StateKind::kRecurrent ? kv_.n_pos() : kv_.held_from(l)});
  }
  return out;
}

StatusOr<std::unique_ptr<EntryState>> KvEntryState::View(int64_t p) const { return SnapshotKv(kv_, p); }

StatusOr<std::unique_ptr<EntryState>> SnapshotKv(const KvState& kv, int64_t p) {
  EMBER_ASSIGN_OR_RETURN(KvState view, kv.View(p));
  return std::unique_ptr<EntryState>(std::make_unique<KvEntryState>(std::move(view)));
}

}  // namespace ember
