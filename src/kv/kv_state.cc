#include "kv/kv_state.h"

#include <cassert>
#include <cstring>
#include <new>
#include <string>

#include "kv/kv_format.h"
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

size_t KvConfig::block_bytes() const {
  const size_t per_layer = (static_cast<size_t>(kv_dim_k()) + static_cast<size_t>(kv_dim_v())) *
                           static_cast<size_t>(block_size) * KvDtypeBytes(dtype);
  return per_layer * static_cast<size_t>(n_layer);
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
  for (size_t i = 0; i < kinds.size(); ++i) {
    const StateKind k = kinds[i].kind;
    if (k == StateKind::kFull) continue;
    if (k == StateKind::kWindow || k == StateKind::kRecurrent) {
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

StatusOr<KvState> KvState::Create(const KvConfig& config) {
  EMBER_RETURN_IF_ERROR(config.Validate());
  return KvState(config);
}

bool KvState::CanTrimTo(int64_t p) const { return p >= 0 && p <= n_pos_; }

Status KvState::TrimTo(int64_t p) {
  if (!CanTrimTo(p)) {
    return InvalidArgument("kv: cannot trim to " + std::to_string(p) + " (state holds " +
                           std::to_string(n_pos_) + " positions)");
  }
  const size_t keep = static_cast<size_t>((p + config_.block_size - 1) / config_.block_size);
  blocks_.resize(keep);
  n_pos_ = p;
  return Status::Ok();
}

StatusOr<KvState> KvState::View(int64_t p) const {
  if (!CanTrimTo(p)) {
    return InvalidArgument("kv: cannot view " + std::to_string(p) + " positions of a state holding " +
                           std::to_string(n_pos_));
  }
  KvState view(config_);
  const size_t keep = static_cast<size_t>((p + config_.block_size - 1) / config_.block_size);
  view.blocks_.assign(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(keep));
  view.n_pos_ = p;
  return view;
}

void KvState::ForEachBlock(const std::function<void(const void*, size_t)>& fn) const {
  for (const auto& b : blocks_) fn(b.get(), b->bytes());
}

Status KvState::Reserve(int64_t n) {
  if (n < 0) return InvalidArgument("kv: negative reserve");
  const int64_t bs = config_.block_size;
  const size_t first = static_cast<size_t>(n_pos_ / bs);
  const size_t end = static_cast<size_t>((n_pos_ + n + bs - 1) / bs);
  if (blocks_.size() < end) blocks_.resize(end);
  for (size_t i = first; i < end; ++i) {
    if (!blocks_[i]) {
      blocks_[i] = std::make_shared<KvBlock>(config_.block_bytes());
    } else if (blocks_[i].use_count() > 1) {
      // Shared with a donor or a view: copy before writing so the other holder's bytes never change.
      // (use_count() == 1 is exact here: only this thread can create new references to our block.)
      auto copy = std::make_shared<KvBlock>(config_.block_bytes());
      std::memcpy(copy->data(), blocks_[i]->data(), copy->bytes());
      blocks_[i] = std::move(copy);
    }
  }
  return Status::Ok();
}

size_t KvState::LayerOffset(int layer) const {
  const size_t per_layer = static_cast<size_t>(config_.kv_dim_k() + config_.kv_dim_v()) *
                           static_cast<size_t>(config_.block_size) * KvDtypeBytes(config_.dtype);
  return per_layer * static_cast<size_t>(layer);
}

uint8_t* KvState::MutableHead(bool v, int layer, int64_t pos, int kv_head) {
  const int64_t bs = config_.block_size;
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t b = static_cast<size_t>(pos / bs);
  assert(pos >= n_pos_ && b < blocks_.size() && blocks_[b].use_count() == 1);
  const int64_t slot = pos % bs;
  size_t off = LayerOffset(layer);
  int64_t hd = config_.head_dim_k;
  if (v) {
    off += static_cast<size_t>(config_.kv_dim_k() * bs) * elt;
    hd = config_.head_dim_v;
  }
  off += static_cast<size_t>((kv_head * bs + slot) * hd) * elt;
  return blocks_[b]->data() + off;
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
  return blocks_[static_cast<size_t>(block)]->data() + off;
}

const uint8_t* KvState::VHead(int layer, int64_t block, int kv_head) const {
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t off = LayerOffset(layer) +
                     static_cast<size_t>(config_.kv_dim_k() * config_.block_size) * elt +
                     static_cast<size_t>(int64_t{kv_head} * config_.block_size * config_.head_dim_v) * elt;
  return blocks_[static_cast<size_t>(block)]->data() + off;
}

}  // namespace ember
