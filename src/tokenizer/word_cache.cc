#include "tokenizer/word_cache.h"

namespace ember {

size_t WordCache::ShardOf(std::string_view word) {
  // Top bits of a different hash than the map's, so a shard's keys still spread over its buckets.
  uint64_t h = 1469598103934665603ull;
  for (const char c : word) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return static_cast<size_t>(h >> 58) % kShards;
}

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = shards_[ShardOf(word)];
  MutexLock lock(&s.mu);
  auto it = s.map.find(word);
  if (it == s.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Insert(std::string_view word, std::span<const int32_t> ids) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = shards_[ShardOf(word)];
  MutexLock lock(&s.mu);
  if (s.map.size() >= kPerShard) s.map.clear();
  s.map.emplace(std::string(word), std::vector<int32_t>(ids.begin(), ids.end()));
}

}  // namespace ember
