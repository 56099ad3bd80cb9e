// Plausibility bounds for model hyperparameters read from GGUF metadata. A file is untrusted: a block
// count of 2^40 must be an error naming the key, not an allocation that aborts the process, and products
// of these values (KV bytes per token, q_dim) must fit in 64 bits. The bounds are far above any real
// model (the largest have ~128 layers, 16k embedding width, 128 heads, 10M context).
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace ember::hparams {

constexpr int64_t kMaxLayers = int64_t{1} << 12;
constexpr int64_t kMaxWidth = int64_t{1} << 20;    // embedding_length, feed_forward_length
constexpr int64_t kMaxHeads = int64_t{1} << 14;    // head_count, head_count_kv
constexpr int64_t kMaxHeadDim = int64_t{1} << 14;  // key_length, value_length, rope.dimension_count
constexpr int64_t kMaxContext = int64_t{1} << 30;  // context_length, attention.sliding_window

// `value` of metadata key `key` must lie in [min, max].
inline Status CheckRange(const std::string& key, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return Status::Ok();
  return InvalidArgument("model key '" + key + "' is " + std::to_string(value) + ", outside " + std::to_string(min) +
                         ".." + std::to_string(max));
}

}  // namespace ember::hparams
