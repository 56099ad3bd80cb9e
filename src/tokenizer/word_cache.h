// A bounded, thread-safe cache of pre-tokenized word -> BPE token ids. Natural text repeats words
// (Zipf), so most words skip the merge loop entirely. Sharded by hash with one mutex per shard, so
// concurrent Encode calls rarely contend; a full shard is simply cleared (cheap, and recency hardly
// matters at these sizes). Capacity is fixed at construction; memory stays below ~kShards * kPerShard
// entries of a few dozen bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/mutex.h"

namespace ember {

class WordCache {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kPerShard = 4096;
  static constexpr size_t kMaxWordBytes = 48;  // longer words are rare and not worth caching

  // Appends the cached ids of `word` to `out` and returns true, or returns false.
  bool Lookup(std::string_view word, std::vector<int32_t>& out) const;
  void Insert(std::string_view word, std::span<const int32_t> ids) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  };
  struct Shard {
    Mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, Eq> map GUARDED_BY(mu);
  };
  static size_t ShardOf(std::string_view word);

  mutable Shard shards_[kShards];
};

}  // namespace ember
