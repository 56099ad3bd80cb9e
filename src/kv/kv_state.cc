#include "kv/kv_state.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "kv/kv_format.h"
#include "util/check.h"
#include "util/half.h"

namespace ember {

const char* KvDtypeName(KvDtype t) { return t == KvDtype::kF32 ? "f32" : "f16"; }

const char* StateKindName(StateKind k) {
  switch (k) {
    case StateKind::kFull: return "full";
    case StateKind::kWindow: return "window";
    case StateKind::kRecurrent: return "recurrent";
  }
  return "unknown";
}

size_t KvConfig::layer_position_bytes() const {
  return (static_cast<size_t>(kv_dim_k()) + static_cast<size_t>(kv_dim_v())) * KvDtypeBytes(dtype);
}

size_t KvConfig::block_bytes() const {
  return layer_position_bytes() * static_cast<size_t>(block_size) * static_cast<size_t>(n_layer);
}

Status KvConfig::Validate() const {
  if (n_layer <= 0 || n_kv_head <= 0 || head_dim_k <= 0 || head_dim_v <= 0 || block_size <= 0) {
    return InvalidArgument("kv config: n_layer, n_kv_head, head_dim_k, head_dim_v and block_size must be "
                           "positive (got " + std::to_string(n_layer) + ", " + std::to_string(n_kv_head) +
                           ", " + std::to_string(head_dim_k) + ", " + std::to_string(head_dim_v) + ", " +
                           std::to_string(block_size) + ")");
  }
  if (dtype != KvDtype::kF16 && dtype != KvDtype::kF32) return InvalidArgument("kv config: unknown dtype");
  if (!kinds.empty() && kinds.size() != static_cast<size_t>(n_layer)) {
    return InvalidArgument("kv config: " + std::to_string(kinds.size()) + " layer kinds for " +
                           std::to_string(n_layer) + " layers");
  }
  if (window_margin < -1) return InvalidArgument("kv config: window_margin must be -1 (auto) or >= 0");
  for (size_t i = 0; i < kinds.size(); ++i) {
    const StateKind k = kinds[i].kind;
    if (k == StateKind::kFull) continue;
    if (k == StateKind::kWindow) {
      if (kinds[i].window <= 0) {
        return InvalidArgument("kv config: layer " + std::to_string(i) + " is a window layer with window " +
                               std::to_string(kinds[i].window) + " (must be positive)");
      }
      continue;
    }
    if (k == StateKind::kRecurrent) {
      return Unimplemented("kv config: layer " + std::to_string(i) + " has state kind '" +
                           StateKindName(k) + "', which ember does not implement yet");
    }
    return InvalidArgument("kv config: layer " + std::to_string(i) + " has an unknown state kind " +
                           std::to_string(static_cast<int>(k)));
  }
  return Status::Ok();
}

KvBlock::KvBlock(size_t bytes)
    : data_(static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)))), bytes_(bytes) {}

KvBlock::~KvBlock() { ::operator delete(data_, std::align_val_t(64)); }

KvState::KvState(const KvConfig& config) : config_(config) {
  // Groups in order of their first layer; a window group per distinct window.
  layer_group_.resize(static_cast<size_t>(config_.n_layer));
  layer_slot_.resize(static_cast<size_t>(config_.n_layer));
  for (int32_t l = 0; l < config_.n_layer; ++l) {
    const LayerStateSpec spec = config_.kind(l);
    size_t g = 0;
    while (g < groups_.size() && !(groups_[g].spec.kind == spec.kind &&
                                   (spec.kind != StateKind::kWindow || groups_[g].spec.window == spec.window))) {
      ++g;
    }
    if (g == groups_.size()) {
      groups_.emplace_back();
      groups_.back().spec = spec.kind == StateKind::kWindow ? spec : LayerStateSpec{spec.kind, 0};
    }
    layer_group_[static_cast<size_t>(l)] = static_cast<int32_t>(g);
    layer_slot_[static_cast<size_t>(l)] = static_cast<int32_t>(groups_[g].layers.size());
    groups_[g].layers.push_back(l);
  }
  for (Group& g : groups_) {
    g.block_bytes = config_.layer_position_bytes() * static_cast<size_t>(config_.block_size) * g.layers.size();
  }
}

StatusOr<KvState> KvState::Create(const KvConfig& config) {
  EMBER_RETURN_IF_ERROR(config.Validate());
  return KvState(config);
}

bool KvState::CanTrimGroupTo(const Group& g, int64_t p) const {
  if (g.spec.kind != StateKind::kWindow || p == n_pos_) return true;
  return g.first * config_.block_size <= std::max<int64_t>(0, p - g.spec.window);
}

bool KvState::CanTrimTo(int64_t p) const {
  if (p < 0 || p > n_pos_) return false;
  for (const Group& g : groups_) {
    if (!CanTrimGroupTo(g, p)) return false;
  }
  return true;
}

int64_t KvState::held_from(int layer) const {
  return groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])].first * config_.block_size;
}

Status KvState::TrimTo(int64_t p) {
  if (!CanTrimTo(p)) {
    return InvalidArgument("kv: cannot trim to " + std::to_string(p) + " (state holds " + std::to_string(n_pos_) +
                           " positions" + (p >= 0 && p <= n_pos_ ? "; a window layer no longer holds the keys "
                                                                  "that position needs" : "") + ")");
  }
  const size_t keep = static_cast<size_t>((p + config_.block_size - 1) / config_.block_size);
  for (Group& g : groups_) g.blocks.resize(std::min(keep, g.blocks.size()));
  n_pos_ = p;
  return Status::Ok();
}

StatusOr<KvState> KvState::View(int64_t p) const {
  if (!CanTrimTo(p)) {
    return InvalidArgument("kv: cannot view " + std::to_string(p) + " positions of a state holding " +
                           std::to_string(n_pos_) + (p >= 0 && p <= n_pos_ ? " (a window layer no longer holds "
                                                                            "the keys that position needs)" : ""));
  }
  KvState view(config_);
  const size_t keep = static_cast<size_t>((p + config_.block_size - 1) / config_.block_size);
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    Group& v = view.groups_[gi];
    const size_t n = std::min(keep, g.blocks.size());
    v.blocks.assign(g.blocks.begin(), g.blocks.begin() + static_cast<std::ptrdiff_t>(n));
    v.first = g.first;
  }
  view.n_pos_ = p;
  return view;
}

size_t KvState::bytes() const {
  size_t total = 0;
  for (const Group& g : groups_) total += static_cast<size_t>(static_cast<int64_t>(g.blocks.size()) - g.first) * g.block_bytes;
  return total;
}

size_t KvState::group_bytes(int layer) const {
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  return static_cast<size_t>(static_cast<int64_t>(g.blocks.size()) - g.first) * g.block_bytes;
}

void KvState::ForEachBlock(const std::function<void(const void*, size_t)>& fn) const {
  for (const Group& g : groups_) {
    for (size_t b = static_cast<size_t>(g.first); b < g.blocks.size(); ++b) fn(g.blocks[b].get(), g.block_bytes);
  }
}

const std::shared_ptr<KvBlock>* KvState::HeldBlock(size_t i) const {
  for (const Group& g : groups_) {
    const size_t held = g.blocks.size() - static_cast<size_t>(g.first);
    if (i < held) return &g.blocks[static_cast<size_t>(g.first) + i];
    i -= held;
  }
  return nullptr;
}

long KvState::BlockUseCount(size_t i) const {
  const std::shared_ptr<KvBlock>* b = HeldBlock(i);
  return b ? b->use_count() : 0;
}

size_t KvState::n_blocks() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.blocks.size() - static_cast<size_t>(g.first);
  return n;
}

Status KvState::Reserve(int64_t n) {
  if (n < 0) return InvalidArgument("kv: negative reserve");
  const int64_t bs = config_.block_size;
  const size_t end = static_cast<size_t>((n_pos_ + n + bs - 1) / bs);
  for (Group& g : groups_) {
    const size_t first = static_cast<size_t>(std::max(g.first, n_pos_ / bs));
    if (g.blocks.size() < end) g.blocks.resize(end);
    for (size_t i = first; i < end; ++i) {
      if (!g.blocks[i]) {
        g.blocks[i] = std::make_shared<KvBlock>(g.block_bytes);
      } else if (g.blocks[i].use_count() > 1) {
        // Shared with a donor or a view: copy before writing so the other holder's bytes never change.
        // (use_count() == 1 is exact here: only this thread can create new references to our block.)
        auto copy = std::make_shared<KvBlock>(g.block_bytes);
        std::memcpy(copy->data(), g.blocks[i]->data(), copy->bytes());
        g.blocks[i] = std::move(copy);
        cow_bytes_copied_ += g.block_bytes;
      }
    }
  }
  return Status::Ok();
}

void KvState::Commit(int64_t n) {
  n_pos_ += n;
  Release();
}

void KvState::Release() {
  const int64_t bs = config_.block_size;
  for (Group& g : groups_) {
    if (g.spec.kind != StateKind::kWindow) continue;
    // The next query (at n_pos) reads keys from n_pos - W + 1; a trim to p needs [p - W, p). Keep
    // window_margin positions more so the state stays trimmable that far back.
    const int64_t keep_from = std::max<int64_t>(0, n_pos_ - g.spec.window - config_.WindowMargin(g.spec.window));
    const int64_t new_first = std::min<int64_t>(keep_from / bs, static_cast<int64_t>(g.blocks.size()));
    for (int64_t b = g.first; b < new_first; ++b) g.blocks[static_cast<size_t>(b)].reset();
    g.first = std::max(g.first, new_first);
  }
}

size_t KvState::LayerOffset(int layer) const {
  const size_t per_layer = config_.layer_position_bytes() * static_cast<size_t>(config_.block_size);
  return per_layer * static_cast<size_t>(layer_slot_[static_cast<size_t>(layer)]);
}

uint8_t* KvState::MutableHead(bool v, int layer, int64_t pos, int kv_head) {
  const int64_t bs = config_.block_size;
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t b = static_cast<size_t>(pos / bs);
  Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  EMBER_CHECK(pos >= n_pos_ && b < g.blocks.size() && g.blocks[b].use_count() == 1);
  const int64_t slot = pos % bs;
  size_t off = LayerOffset(layer);
  int64_t hd = config_.head_dim_k;
  if (v) {
    off += static_cast<size_t>(config_.kv_dim_k() * bs) * elt;
    hd = config_.head_dim_v;
  }
  off += static_cast<size_t>((kv_head * bs + slot) * hd) * elt;
  return g.blocks[b]->data() + off;
}

static void StoreRow(KvDtype dtype, const float* src, int64_t n, uint8_t* dst) {
  if (dtype == KvDtype::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  auto* h = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = F32ToFp16(src[i]);
}

void KvState::StoreK(int layer, int64_t pos, const float* row) {
  for (int h = 0; h < config_.n_kv_head; ++h) {
    StoreRow(config_.dtype, row + int64_t{h} * config_.head_dim_k, config_.head_dim_k,
             MutableHead(false, layer, pos, h));
  }
}

void KvState::StoreV(int layer, int64_t pos, const float* row) {
  for (int h = 0; h < config_.n_kv_head; ++h) {
    StoreRow(config_.dtype, row + int64_t{h} * config_.head_dim_v, config_.head_dim_v,
             MutableHead(true, layer, pos, h));
  }
}

const uint8_t* KvState::KHead(int layer, int64_t block, int kv_head) const {
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t off = LayerOffset(layer) +
                     static_cast<size_t>(int64_t{kv_head} * config_.block_size * config_.head_dim_k) * elt;
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  EMBER_CHECK(block >= g.first && static_cast<size_t>(block) < g.blocks.size());
  return g.blocks[static_cast<size_t>(block)]->data() + off;
}

const uint8_t* KvState::VHead(int layer, int64_t block, int kv_head) const {
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t off = LayerOffset(layer) +
                     static_cast<size_t>(config_.kv_dim_k() * config_.block_size) * elt +
                     static_cast<size_t>(int64_t{kv_head} * config_.block_size * config_.head_dim_v) * elt;
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  EMBER_CHECK(block >= g.first && static_cast<size_t>(block) < g.blocks.size());
  return g.blocks[static_cast<size_t>(block)]->data() + off;
}

}  // namespace ember
