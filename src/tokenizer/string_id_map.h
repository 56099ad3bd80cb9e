// An immutable-after-build hash map from byte strings to int32 ids, with allocation-free lookup by
// string_view (token text -> token id is looked up for every symbol pair the tokenizers try). Keys are
// copied into one arena, so the map owns everything and can be moved freely.
// Thread-safety: concurrent Find() calls are safe once building (Set) is done.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class StringIdMap {
 public:
  static constexpr int32_t kAbsent = -1;

  // Sizes the table for `n` keys of `key_bytes` bytes in all, so that building never rehashes (startup
  // time: a 128k vocabulary otherwise rehashes ~8 times).
  void Reserve(size_t n, size_t key_bytes);
  // Sets key -> id; a later Set of the same key overwrites (llama.cpp's token_to_id: last id wins).
  void Set(std::string_view key, int32_t id);
  // Sets keys[i] -> i for every i, in order (so a repeated key maps to its last index). Hashes ahead and
  // prefetches slots: inserting 128k vocabulary texts one by one is one cache miss after another.
  void SetIndexed(std::span<const std::string> keys);
  // Returns the id of `key` or kAbsent.
  int32_t Find(std::string_view key) const;
  // Find with `hash` == Hash(key) already known (BPE keeps the hash of each symbol it builds).
  int32_t FindHashed(std::string_view key, uint64_t hash) const;
  // The key hash (XXH3-64).
  static uint64_t Hash(std::string_view key);
  size_t size() const { return size_; }

 private:
  // 16 bytes, 4 slots per cache line: building a 128k vocabulary is bound by cache misses on this table.
  struct Slot {
    uint32_t tag = 0;  // high 32 bits of the hash (the low bits pick the slot)
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = kAbsent;  // kAbsent marks an empty slot
  };
  void Rehash(size_t n_slots);
  void SetHashed(std::string_view key, uint64_t hash, int32_t id);
  // Index of the slot holding `key`, or of the empty slot where it would go.
  size_t Probe(std::string_view key, uint64_t hash) const;

  std::string arena_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ember
