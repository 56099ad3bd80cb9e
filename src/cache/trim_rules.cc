#include "cache/trim_rules.h"

#include <algorithm>
#include <string>

namespace ember {
namespace {

Status UnknownKind(size_t layer, StateKind kind) {
  return InvalidArgument("prompt cache: layer " + std::to_string(layer) + " has state kind " +
                         std::to_string(static_cast<int>(kind)) + ", which the cache has no trim rule for");
}

}  // namespace

Status ValidateStateKinds(const EntryState& state) {
  const auto layers = state.layers();
  if (layers.empty()) return InvalidArgument("prompt cache: a state must describe at least one layer");
  for (size_t i = 0; i < layers.size(); ++i) {
    switch (layers[i].kind) {
      case StateKind::kFull:
      case StateKind::kWindow:
      case StateKind::kRecurrent:
        break;
      default:
        return UnknownKind(i, layers[i].kind);
    }
  }
  return Status::Ok();
}

StatusOr<bool> CanServeAt(const EntryState& state, int64_t p) {
  const int64_t n = state.n_pos();
  bool ok = p >= 0 && p <= n && p >= state.min_reusable_offset();
  const auto layers = state.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerHold& l = layers[i];
    switch (l.kind) {
      case StateKind::kFull:
        ok = ok && l.held_from <= 0;
        break;
      case StateKind::kWindow:
        ok = ok && (p == n || l.held_from <= std::max<int64_t>(0, p - l.window));
        break;
      case StateKind::kRecurrent:
        ok = ok && p == n;
        break;
      default:
        return UnknownKind(i, l.kind);  // checked even when an earlier layer already refused
    }
  }
  return ok;
}

StatusOr<bool> FullyTrimmable(const EntryState& state) {
  const auto layers = state.layers();
  bool ok = true;
  for (size_t i = 0; i < layers.size(); ++i) {
    switch (layers[i].kind) {
      case StateKind::kFull:
      case StateKind::kWindow:
        ok = ok && layers[i].held_from <= 0;
        break;
      case StateKind::kRecurrent:
        ok = ok && state.n_pos() == 0;
        break;
      default:
        return UnknownKind(i, layers[i].kind);
    }
  }
  return ok;
}

}  // namespace ember
