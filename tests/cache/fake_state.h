// TEST-ONLY entry states: any layer kinds (sliding-window rings, recurrent, unknown), a chosen
// min_reusable_offset, and buffers shared between a state and its views, so the cache's rules can be
// exercised before those architectures exist in the engine.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "cache/entry_state.h"

namespace ember::testing {

struct FakeLayer {
  StateKind kind = StateKind::kFull;
  int32_t window = 0;
  int64_t ring = 0;  // kWindow: positions a ring keeps (0: keeps everything, a block design)
};

class FakeState final : public EntryState {
 public:
  static constexpr int64_t kBlock = 4;  // positions per buffer

  // A state of n positions with fresh buffers of bytes_per_block bytes each.
  static std::unique_ptr<FakeState> Make(int64_t n, std::vector<FakeLayer> layers = {{}}, int64_t mro = 0,
                                         size_t bytes_per_block = 100) {
    auto s = std::unique_ptr<FakeState>(new FakeState());
    s->n_ = n;
    s->mro_ = mro;
    for (const FakeLayer& l : layers) {
      int64_t held = 0;
      if (l.kind == StateKind::kWindow && l.ring > 0) held = std::max<int64_t>(0, n - l.ring);
      if (l.kind == StateKind::kRecurrent) held = n;
      s->holds_.push_back(LayerHold{l.kind, l.window, held});
    }
    for (int64_t i = 0; i < (n + kBlock - 1) / kBlock; ++i) {
      s->buffers_.push_back(std::make_shared<std::vector<uint8_t>>(bytes_per_block, static_cast<uint8_t>(i)));
    }
    return s;
  }

  // `base` (a state or a view) extended to n positions: its buffers shared, new ones for new blocks.
  static std::unique_ptr<FakeState> Extend(const EntryState& base, int64_t n, size_t bytes_per_block = 100) {
    const auto& b = dynamic_cast<const FakeState&>(base);
    auto s = std::unique_ptr<FakeState>(new FakeState(b));
    s->n_ = n;
    while (static_cast<int64_t>(s->buffers_.size()) < (n + kBlock - 1) / kBlock) {
      s->buffers_.push_back(std::make_shared<std::vector<uint8_t>>(bytes_per_block, 0));
    }
    return s;
  }

  int64_t n_pos() const override { return n_; }
  std::vector<LayerHold> layers() const override { return holds_; }
  int64_t min_reusable_offset() const override { return mro_; }
  void ForEachBuffer(const std::function<void(const void*, size_t)>& fn) const override {
    for (const auto& b : buffers_) fn(b.get(), b->size());
  }
  StatusOr<std::unique_ptr<EntryState>> View(int64_t p) const override {
    ++views_made;
    if (p < 0 || p > n_) return InvalidArgument("fake: bad view");
    auto v = std::unique_ptr<FakeState>(new FakeState());
    v->n_ = p;
    v->mro_ = mro_;
    v->holds_ = holds_;  // a view of a ring still lacks what the ring dropped
    v->buffers_.assign(buffers_.begin(), buffers_.begin() + (p + kBlock - 1) / kBlock);
    return std::unique_ptr<EntryState>(std::move(v));
  }
  long use_count(size_t i) const { return buffers_[i].use_count(); }
  const void* buffer_id(size_t i) const { return buffers_[i].get(); }

  mutable int views_made = 0;

 private:
  FakeState() = default;
  FakeState(const FakeState&) = default;
  int64_t n_ = 0;
  int64_t mro_ = 0;
  std::vector<LayerHold> holds_;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> buffers_;
};

}  // namespace ember::testing
