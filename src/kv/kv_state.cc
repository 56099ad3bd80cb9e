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

namespace {

int64_t RecurrentSliceFloats(int64_t state_floats) {
  return (state_floats + kRecurrentAlignFloats - 1) / kRecurrentAlignFloats * kRecurrentAlignFloats;
}

// Per-layer checks of Validate: each kind's own fields, and the recurrent block's size bound.
Status ValidateLayerKinds(const std::vector<LayerStateSpec>& kinds) {
  constexpr int64_t kMaxFloats = static_cast<int64_t>(kMaxKvBlockBytes / sizeof(float));
  int64_t recurrent_floats = 0;  // padded; <= kMaxFloats after every step, so it never wraps
  for (size_t i = 0; i < kinds.size(); ++i) {
    const LayerStateSpec& s = kinds[i];
    const std::string layer = "kv config: layer " + std::to_string(i);
    if (s.kind != StateKind::kFull && s.kind != StateKind::kWindow && s.kind != StateKind::kRecurrent) {
      return InvalidArgument(layer + " has an unknown state kind " + std::to_string(static_cast<int>(s.kind)));
    }
    if (s.kind != StateKind::kRecurrent && s.state_floats != 0) {
      return InvalidArgument(layer + " is a " + StateKindName(s.kind) + " layer with state_floats " +
                             std::to_string(s.state_floats) + " (only recurrent layers have one)");
    }
    if (s.kind == StateKind::kWindow && s.window <= 0) {
      return InvalidArgument(layer + " is a window layer with window " + std::to_string(s.window) +
                             " (must be positive)");
    }
    if (s.kind != StateKind::kRecurrent) continue;
    if (s.window != 0) {
      return InvalidArgument(layer + " is a recurrent layer with window " + std::to_string(s.window) + " (must be 0)");
    }
    if (s.state_floats <= 0 || s.state_floats > kMaxFloats ||
        (recurrent_floats += RecurrentSliceFloats(s.state_floats)) > kMaxFloats) {
      return InvalidArgument(layer + " is a recurrent layer with state_floats " + std::to_string(s.state_floats) +
                             " (must be positive, and every recurrent layer's state together within the " +
                             std::to_string(kMaxKvBlockBytes >> 20) + " MiB block limit)");
    }
  }
  return Status::Ok();
}

}  // namespace

bool KvConfig::has_recurrent() const {
  return std::any_of(kinds.begin(), kinds.end(),
                     [](const LayerStateSpec& s) { return s.kind == StateKind::kRecurrent; });
}

size_t KvConfig::recurrent_bytes() const {
  int64_t floats = 0;
  for (const LayerStateSpec& s : kinds) {
    if (s.kind == StateKind::kRecurrent) floats += RecurrentSliceFloats(s.state_floats);
  }
  return static_cast<size_t>(floats) * sizeof(float);
}

size_t KvConfig::block_bytes() const {
  const auto recurrent = std::count_if(kinds.begin(), kinds.end(),
                                       [](const LayerStateSpec& s) { return s.kind == StateKind::kRecurrent; });
  const size_t attention = static_cast<size_t>(n_layer) - static_cast<size_t>(recurrent);
  return layer_position_bytes() * static_cast<size_t>(block_size) * attention;
}

Status KvConfig::Validate() const {
  if (n_layer <= 0 || n_kv_head <= 0 || head_dim_k <= 0 || head_dim_v <= 0 || block_size <= 0) {
    return InvalidArgument("kv config: n_layer, n_kv_head, head_dim_k, head_dim_v and block_size must be "
                           "positive (got " + std::to_string(n_layer) + ", " + std::to_string(n_kv_head) +
                           ", " + std::to_string(head_dim_k) + ", " + std::to_string(head_dim_v) + ", " +
                           std::to_string(block_size) + ")");
  }
  if (dtype != KvDtype::kF16 && dtype != KvDtype::kF32) return InvalidArgument("kv config: unknown dtype");
  // Every block size and offset is computed in size_t from these int32s; refuse what would wrap.
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(uint64_t(n_kv_head), uint64_t(head_dim_k) + uint64_t(head_dim_v), &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t(KvDtypeBytes(dtype)) * uint64_t(block_size), &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t(n_layer), &bytes) || bytes > kMaxKvBlockBytes) {
    return InvalidArgument("kv config: one block of " + std::to_string(block_size) + " positions of " +
                           std::to_string(n_layer) + " layers x " + std::to_string(n_kv_head) + " heads x (" +
                           std::to_string(head_dim_k) + " + " + std::to_string(head_dim_v) +
                           ") dims exceeds the " + std::to_string(kMaxKvBlockBytes >> 20) + " MiB block limit");
  }
  if (!kinds.empty() && kinds.size() != static_cast<size_t>(n_layer)) {
    return InvalidArgument("kv config: " + std::to_string(kinds.size()) + " layer kinds for " +
                           std::to_string(n_layer) + " layers");
  }
  if (window_margin < -1) return InvalidArgument("kv config: window_margin must be -1 (auto) or >= 0");
  return ValidateLayerKinds(kinds);
}

KvBlock::KvBlock(size_t bytes)
    : data_(static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)))), bytes_(bytes) {}

KvBlock::~KvBlock() { ::operator delete(data_, std::align_val_t(64)); }

KvState::KvState(const KvConfig& config) : config_(config) {
  // Groups in order of their first layer; a window group per distinct window. Recurrent layers get a
  // slice of the one recurrent block instead.
  layer_group_.resize(static_cast<size_t>(config_.n_layer));
  layer_slot_.resize(static_cast<size_t>(config_.n_layer));
  recurrent_offset_.resize(static_cast<size_t>(config_.n_layer));
  int64_t recurrent_floats = 0;
  for (int32_t l = 0; l < config_.n_layer; ++l) {
    const LayerStateSpec spec = config_.kind(l);
    if (spec.kind == StateKind::kRecurrent) {
      layer_group_[static_cast<size_t>(l)] = -1;
      recurrent_offset_[static_cast<size_t>(l)] = recurrent_floats;
      recurrent_floats += RecurrentSliceFloats(spec.state_floats);
      continue;
    }
    size_t g = 0;
    while (g < groups_.size() && !(groups_[g].spec.kind == spec.kind &&
                                   (spec.kind != StateKind::kWindow || groups_[g].spec.window == spec.window))) {
      ++g;
    }
    if (g == groups_.size()) {
      groups_.emplace_back();
      groups_.back().spec = spec.kind == StateKind::kWindow ? spec : LayerStateSpec{spec.kind, 0, 0};
    }
    layer_group_[static_cast<size_t>(l)] = static_cast<int32_t>(g);
    layer_slot_[static_cast<size_t>(l)] = static_cast<int32_t>(groups_[g].layers.size());
    groups_[g].layers.push_back(l);
  }
  for (Group& g : groups_) {
    g.block_bytes = config_.layer_position_bytes() * static_cast<size_t>(config_.block_size) * g.layers.size();
  }
  recurrent_bytes_ = static_cast<size_t>(recurrent_floats) * sizeof(float);
}

StatusOr<KvState> KvState::Create(const KvConfig& config) {
  EMBER_RETURN_IF_ERROR(config.Validate());
  KvState state(config);
  if (state.recurrent_bytes_ > 0) {
    // The recurrent state before any position: zeros (the alignment padding too: never read, but defined).
    state.recurrent_ = std::make_shared<KvBlock>(state.recurrent_bytes_);
    std::memset(state.recurrent_->data(), 0, state.recurrent_bytes_);
  }
  return state;
}

bool KvState::CanTrimGroupTo(const Group& g, int64_t p) const {
  if (g.spec.kind != StateKind::kWindow || p == n_pos_) return true;
  return g.first * config_.block_size <= std::max<int64_t>(0, p - g.spec.window);
}

bool KvState::CanTrimTo(int64_t p) const {
  if (p < 0 || p > n_pos_) return false;
  if (recurrent_bytes_ > 0 && (p != n_pos_ || in_flux_)) return false;  // a recurrent state cannot rewind
  for (const Group& g : groups_) {
    if (!CanTrimGroupTo(g, p)) return false;
  }
  return true;
}

int64_t KvState::held_from(int layer) const {
  if (IsRecurrent(layer)) return n_pos_;
  return groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])].first * config_.block_size;
}

Status KvState::TrimError(const char* what, int64_t p) const {
  const std::string head = "kv: cannot " + std::string(what) + " " + std::to_string(p) + " (state holds " +
                           std::to_string(n_pos_) + " positions";
  if (in_flux_) {
    return FailedPrecondition(head + "; its recurrent layers are being updated: Reserve without Commit)");
  }
  if (p < 0 || p > n_pos_) return InvalidArgument(head + ")");
  if (recurrent_bytes_ > 0 && p != n_pos_) {
    return InvalidArgument(head + "; a recurrent layer holds only the state after the last position)");
  }
  return InvalidArgument(head + "; a window layer no longer holds the keys that position needs)");
}

Status KvState::TrimTo(int64_t p) {
  if (!CanTrimTo(p)) return TrimError("trim to", p);
  const size_t keep = static_cast<size_t>((p + config_.block_size - 1) / config_.block_size);
  for (Group& g : groups_) g.blocks.resize(std::min(keep, g.blocks.size()));
  n_pos_ = p;
  return Status::Ok();
}

StatusOr<KvState> KvState::View(int64_t p) const {
  if (!CanTrimTo(p)) return TrimError("view", p);
  KvState view(config_);
  view.recurrent_ = recurrent_;  // p == n_pos: the state after p positions, shared
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
  size_t total = recurrent_ ? recurrent_bytes_ : 0;
  for (const Group& g : groups_) total += static_cast<size_t>(static_cast<int64_t>(g.blocks.size()) - g.first) * g.block_bytes;
  return total;
}

size_t KvState::group_bytes(int layer) const {
  if (IsRecurrent(layer)) return recurrent_ ? recurrent_bytes_ : 0;
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  return static_cast<size_t>(static_cast<int64_t>(g.blocks.size()) - g.first) * g.block_bytes;
}

void KvState::ForEachBlock(const std::function<void(const void*, size_t)>& fn) const {
  for (const Group& g : groups_) {
    for (size_t b = static_cast<size_t>(g.first); b < g.blocks.size(); ++b) fn(g.blocks[b].get(), g.block_bytes);
  }
  if (recurrent_) fn(recurrent_.get(), recurrent_bytes_);
}

const std::shared_ptr<KvBlock>* KvState::HeldBlock(size_t i) const {
  for (const Group& g : groups_) {
    const size_t held = g.blocks.size() - static_cast<size_t>(g.first);
    if (i < held) return &g.blocks[static_cast<size_t>(g.first) + i];
    i -= held;
  }
  return i == 0 && recurrent_ ? &recurrent_ : nullptr;
}

long KvState::BlockUseCount(size_t i) const {
  const std::shared_ptr<KvBlock>* b = HeldBlock(i);
  return b ? b->use_count() : 0;
}

size_t KvState::n_blocks() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.blocks.size() - static_cast<size_t>(g.first);
  return n + (recurrent_ ? 1 : 0);
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
  if (recurrent_bytes_ > 0) {
    EMBER_CHECK(recurrent_ != nullptr);  // only a moved-from state lacks it
    if (recurrent_.use_count() > 1) {  // shared with a view or a cache entry: the pass updates in place
      auto copy = std::make_shared<KvBlock>(recurrent_bytes_);
      std::memcpy(copy->data(), recurrent_->data(), recurrent_bytes_);
      recurrent_ = std::move(copy);
      cow_bytes_copied_ += recurrent_bytes_;
    }
    in_flux_ = true;
  }
  return Status::Ok();
}

void KvState::Commit(int64_t n) {
  n_pos_ += n;
  in_flux_ = false;
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
  EMBER_CHECK(!IsRecurrent(layer));
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
  EMBER_CHECK(!IsRecurrent(layer));
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t off = LayerOffset(layer) +
                     static_cast<size_t>(int64_t{kv_head} * config_.block_size * config_.head_dim_k) * elt;
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  EMBER_CHECK(block >= g.first && static_cast<size_t>(block) < g.blocks.size());
  return g.blocks[static_cast<size_t>(block)]->data() + off;
}

const uint8_t* KvState::VHead(int layer, int64_t block, int kv_head) const {
  EMBER_CHECK(!IsRecurrent(layer));
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t off = LayerOffset(layer) +
                     static_cast<size_t>(config_.kv_dim_k() * config_.block_size) * elt +
                     static_cast<size_t>(int64_t{kv_head} * config_.block_size * config_.head_dim_v) * elt;
  const Group& g = groups_[static_cast<size_t>(layer_group_[static_cast<size_t>(layer)])];
  EMBER_CHECK(block >= g.first && static_cast<size_t>(block) < g.blocks.size());
  return g.blocks[static_cast<size_t>(block)]->data() + off;
}

float* KvState::RecurrentState(int layer) {
  EMBER_CHECK(layer >= 0 && layer < config_.n_layer && IsRecurrent(layer));
  // Between Reserve and Commit: Reserve made the block this state's own, so no view or entry sees writes.
  EMBER_CHECK(in_flux_ && recurrent_.use_count() == 1);
  return reinterpret_cast<float*>(recurrent_->data()) + recurrent_offset_[static_cast<size_t>(layer)];
}

const float* KvState::RecurrentState(int layer) const {
  EMBER_CHECK(layer >= 0 && layer < config_.n_layer && IsRecurrent(layer) && recurrent_ != nullptr);
  return reinterpret_cast<const float*>(recurrent_->data()) + recurrent_offset_[static_cast<size_t>(layer)];
}

}  // namespace ember
