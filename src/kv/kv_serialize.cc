// KvState::Serialize / Deserialize — the stream layout is documented in kv/kv_format.h.
#include <algorithm>
#include <cstring>
#include <string>

#include "kv/kv_format.h"
#include "kv/kv_state.h"

namespace ember {
namespace {

template <typename T>
Status Put(ByteSink& sink, T v) {
  return sink.Write(&v, sizeof(T));
}

template <typename T>
Status Get(ByteSource& src, T* v) {
  return src.Read(v, sizeof(T));
}

Status WriteHeader(const KvConfig& c, uint32_t version, int64_t n_pos, ByteSink& sink) {
  EMBER_RETURN_IF_ERROR(Put(sink, kKvMagic));
  EMBER_RETURN_IF_ERROR(Put(sink, version));
  const uint8_t dtype[4] = {static_cast<uint8_t>(c.dtype), 0, 0, 0};
  EMBER_RETURN_IF_ERROR(sink.Write(dtype, 4));
  for (int32_t v : {c.n_layer, c.n_kv_head, c.head_dim_k, c.head_dim_v, c.block_size}) {
    EMBER_RETURN_IF_ERROR(Put(sink, v));
  }
  for (int32_t l = 0; l < c.n_layer; ++l) {
    const LayerStateSpec spec = c.kinds.empty() ? LayerStateSpec{} : c.kinds[static_cast<size_t>(l)];
    const uint8_t kind[4] = {static_cast<uint8_t>(spec.kind), 0, 0, 0};
    EMBER_RETURN_IF_ERROR(sink.Write(kind, 4));
    EMBER_RETURN_IF_ERROR(Put(sink, spec.window));
    if (version >= kKvFormatVersionRecurrent) EMBER_RETURN_IF_ERROR(Put(sink, spec.state_floats));
  }
  return Put(sink, n_pos);
}

Status Mismatch(const char* field, int64_t want, int64_t got) {
  return InvalidArgument("kv state stream: " + std::string(field) + " is " + std::to_string(got) +
                         ", this model expects " + std::to_string(want));
}

struct StreamHeader {
  uint32_t version = 0;
  int64_t n_pos = 0;
};

// Reads and checks the header (up to n_pos) against `c`.
StatusOr<StreamHeader> ReadHeader(const KvConfig& c, ByteSource& src) {
  uint32_t magic = 0, version = 0;
  EMBER_RETURN_IF_ERROR(Get(src, &magic));
  if (magic != kKvMagic) return Corrupt("kv state stream: bad magic");
  EMBER_RETURN_IF_ERROR(Get(src, &version));
  if (version < kKvFormatVersionFull || version > kKvFormatVersionRecurrent) {
    return Unimplemented("kv state stream: format version " + std::to_string(version) + " (expected " +
                         std::to_string(kKvFormatVersionFull) + " to " + std::to_string(kKvFormatVersionRecurrent) +
                         ")");
  }
  uint8_t dtype[4];
  EMBER_RETURN_IF_ERROR(src.Read(dtype, 4));
  if (dtype[0] != static_cast<uint8_t>(c.dtype)) return Mismatch("dtype", int(c.dtype), dtype[0]);
  const char* names[] = {"n_layer", "n_kv_head", "head_dim_k", "head_dim_v", "block_size"};
  const int32_t want[] = {c.n_layer, c.n_kv_head, c.head_dim_k, c.head_dim_v, c.block_size};
  for (int i = 0; i < 5; ++i) {
    int32_t got = 0;
    EMBER_RETURN_IF_ERROR(Get(src, &got));
    if (got != want[i]) return Mismatch(names[i], want[i], got);
  }
  for (int32_t l = 0; l < c.n_layer; ++l) {
    const LayerStateSpec spec = c.kinds.empty() ? LayerStateSpec{} : c.kinds[static_cast<size_t>(l)];
    uint8_t kind[4];
    int32_t window = 0;
    EMBER_RETURN_IF_ERROR(src.Read(kind, 4));
    EMBER_RETURN_IF_ERROR(Get(src, &window));
    if (kind[0] != static_cast<uint8_t>(spec.kind)) return Mismatch("layer state kind", int(spec.kind), kind[0]);
    if (window != spec.window) return Mismatch("layer window", spec.window, window);
    if (version < kKvFormatVersionRecurrent) continue;
    int64_t state_floats = 0;
    EMBER_RETURN_IF_ERROR(Get(src, &state_floats));
    if (state_floats != spec.state_floats) return Mismatch("layer state_floats", spec.state_floats, state_floats);
  }
  // Every kind matched; the version must be the one such a state writes (only version 3 carries
  // recurrent layers, and only they make a writer choose it).
  if ((version == kKvFormatVersionRecurrent) != c.has_recurrent()) {
    return Corrupt("kv state stream: format version " + std::to_string(version) +
                   (c.has_recurrent() ? " cannot hold recurrent layers" : " without a recurrent layer"));
  }
  int64_t n_pos = 0;
  EMBER_RETURN_IF_ERROR(Get(src, &n_pos));
  if (n_pos < 0 || n_pos > (int64_t{1} << 32)) return Corrupt("kv state stream: bad n_pos " + std::to_string(n_pos));
  return StreamHeader{version, n_pos};
}

}  // namespace

Status KvState::Serialize(ByteSink& sink) const {
  if (in_flux_) return FailedPrecondition("kv: cannot serialize a state whose recurrent layers are being updated");
  bool all_full = true;
  for (const Group& g : groups_) all_full = all_full && g.spec.kind == StateKind::kFull;
  const uint32_t version = recurrent_bytes_ > 0 ? kKvFormatVersionRecurrent
                           : all_full          ? kKvFormatVersionFull
                                               : kKvFormatVersionWindow;
  EMBER_RETURN_IF_ERROR(WriteHeader(config_, version, n_pos_, sink));
  if (version != kKvFormatVersionFull) {
    for (int l = 0; l < config_.n_layer; ++l) EMBER_RETURN_IF_ERROR(Put(sink, held_from(l)));
  }
  const int64_t bs = config_.block_size;
  const size_t elt = KvDtypeBytes(config_.dtype);
  const size_t n_blocks = static_cast<size_t>((n_pos_ + bs - 1) / bs);  // a failed forward may reserve more
  for (const Group& g : groups_) {
    for (size_t b = static_cast<size_t>(g.first); b < std::min(n_blocks, g.blocks.size()); ++b) {
      const int64_t cnt = std::min<int64_t>(bs, n_pos_ - static_cast<int64_t>(b) * bs);
      if (cnt == bs) {  // a full block's raw bytes are exactly the stream layout
        EMBER_RETURN_IF_ERROR(sink.Write(g.blocks[b]->data(), g.blocks[b]->bytes()));
        continue;
      }
      for (int l : g.layers) {
        for (int h = 0; h < config_.n_kv_head; ++h) {
          EMBER_RETURN_IF_ERROR(sink.Write(KHead(l, b, h), static_cast<size_t>(cnt * config_.head_dim_k) * elt));
        }
        for (int h = 0; h < config_.n_kv_head; ++h) {
          EMBER_RETURN_IF_ERROR(sink.Write(VHead(l, b, h), static_cast<size_t>(cnt * config_.head_dim_v) * elt));
        }
      }
    }
  }
  return WriteRecurrent(sink);
}

Status KvState::WriteRecurrent(ByteSink& sink) const {
  for (int l = 0; l < config_.n_layer; ++l) {
    if (!IsRecurrent(l)) continue;
    EMBER_RETURN_IF_ERROR(
        sink.Write(RecurrentState(l), static_cast<size_t>(config_.kind(l).state_floats) * sizeof(float)));
  }
  return Status::Ok();
}

Status KvState::ReadRecurrent(ByteSource& source) {
  for (int l = 0; l < config_.n_layer; ++l) {
    if (!IsRecurrent(l)) continue;
    EMBER_RETURN_IF_ERROR(
        source.Read(RecurrentState(l), static_cast<size_t>(config_.kind(l).state_floats) * sizeof(float)));
  }
  return Status::Ok();
}

Status KvState::ReadBlocks(ByteSource& source, int64_t n_pos) {
  const int64_t bs = config_.block_size;
  const size_t elt = KvDtypeBytes(config_.dtype);
  for (Group& g : groups_) {
    for (size_t b = static_cast<size_t>(g.first); b < g.blocks.size(); ++b) {
      const int64_t cnt = std::min<int64_t>(bs, n_pos - static_cast<int64_t>(b) * bs);
      if (cnt == bs) {
        EMBER_RETURN_IF_ERROR(source.Read(g.blocks[b]->data(), g.blocks[b]->bytes()));
        continue;
      }
      for (int l : g.layers) {
        for (int h = 0; h < config_.n_kv_head; ++h) {
          auto* dst = const_cast<uint8_t*>(KHead(l, b, h));
          EMBER_RETURN_IF_ERROR(source.Read(dst, static_cast<size_t>(cnt * config_.head_dim_k) * elt));
        }
        for (int h = 0; h < config_.n_kv_head; ++h) {
          auto* dst = const_cast<uint8_t*>(VHead(l, b, h));
          EMBER_RETURN_IF_ERROR(source.Read(dst, static_cast<size_t>(cnt * config_.head_dim_v) * elt));
        }
      }
    }
  }
  return Status::Ok();
}

StatusOr<KvState> KvState::Deserialize(const KvConfig& config, ByteSource& source) {
  EMBER_ASSIGN_OR_RETURN(KvState state, Create(config));
  EMBER_ASSIGN_OR_RETURN(const StreamHeader hdr, ReadHeader(config, source));
  const int64_t n_pos = hdr.n_pos;
  const int64_t bs = config.block_size;
  // Held ranges: version 1 holds everything; versions 2 and 3 say per layer, consistently per group (a
  // recurrent layer: n_pos, the one state it has).
  std::vector<int64_t> held(static_cast<size_t>(config.n_layer), 0);
  if (hdr.version != kKvFormatVersionFull) {
    for (int64_t& h : held) EMBER_RETURN_IF_ERROR(Get(source, &h));
  }
  uint64_t need = 0;  // bytes of data the stream must still hold (see below)
  for (int l = 0; l < config.n_layer; ++l) {
    if (!state.IsRecurrent(l)) continue;
    if (held[static_cast<size_t>(l)] != n_pos) {
      return Corrupt("kv state stream: recurrent layer " + std::to_string(l) + " holds from " +
                     std::to_string(held[static_cast<size_t>(l)]) + ", not n_pos " + std::to_string(n_pos));
    }
    need += static_cast<uint64_t>(config.kind(l).state_floats) * sizeof(float);  // Validate bounds the sum
  }
  for (Group& g : state.groups_) {
    const int64_t h = held[static_cast<size_t>(g.layers[0])];
    for (int l : g.layers) {
      if (held[static_cast<size_t>(l)] != h) return Corrupt("kv state stream: layers of one group hold different ranges");
    }
    const bool window = g.spec.kind == StateKind::kWindow;
    const int64_t needed_from = window ? std::max<int64_t>(0, n_pos - g.spec.window) : 0;
    if (h < 0 || h % bs != 0 || h > needed_from) {
      return Corrupt("kv state stream: layer " + std::to_string(g.layers[0]) + " holds from " + std::to_string(h) +
                     ", which does not cover what position " + std::to_string(n_pos) + " needs");
    }
    g.first = h / bs;
  }
  // Every held position is in the stream, so the stream must be that long before blocks are allocated
  // for it: a corrupt n_pos (up to 2^32) would otherwise reserve gigabytes for a few bytes of data.
  // No wrap: Validate keeps one position of all layers under kMaxKvBlockBytes (2^30), n_pos <= 2^32.
  for (const Group& g : state.groups_) {
    need += g.layers.size() * config.layer_position_bytes() * static_cast<uint64_t>(n_pos - g.first * bs);
  }
  if (need > source.remaining()) {
    return Corrupt("kv state stream: " + std::to_string(n_pos) + " positions claimed, but only " +
                   std::to_string(source.remaining()) + " bytes of state follow");
  }
  EMBER_RETURN_IF_ERROR(state.Reserve(n_pos));
  EMBER_RETURN_IF_ERROR(state.ReadBlocks(source, n_pos));
  EMBER_RETURN_IF_ERROR(state.ReadRecurrent(source));
  state.Commit(n_pos);
  return state;
}

}  // namespace ember
