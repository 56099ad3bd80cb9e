// An immutable-after-build hash map from byte strings to int32 ids, with allocation-free lookup by
// string_view (token text -> token id is looked up for every symbol pair the tokenizers try). Keys are
// copied into one arena, so the map owns everything and can be moved freely.
// Thread-safety: concurrent Find() calls are safe once building (Set) is done.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class StringIdMap {
 public:
  static constexpr int32_t kAbsent = -1;

  // Sets key -> id; a later Set of the same key overwrites (llama.cpp's token_to_id: last id wins).
  void Set(std::string_view key, int32_t id);
  // Returns the id of `key` or kAbsent.
  int32_t Find(std::string_view key) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = kAbsent;  // kAbsent marks an empty slot
  };
  static uint64_t Hash(std::string_view key);
  void Grow();
  // Index of the slot holding `key`, or of the empty slot where it would go.
  size_t Probe(std::string_view key, uint64_t hash) const;

  std::string arena_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ember
