#include "tokenizer/string_id_map.h"

#include <xxhash.h>

namespace ember {

uint64_t StringIdMap::Hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

size_t StringIdMap::Probe(std::string_view key, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id == kAbsent) return i;
    if (s.hash == hash && std::string_view(arena_.data() + s.offset, s.length) == key) return i;
  }
}

void StringIdMap::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id == kAbsent) continue;
    size_t i = s.hash & mask;
    while (slots_[i].id != kAbsent) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void StringIdMap::Set(std::string_view key, int32_t id) {
  // Load factor <= 1/2 keeps probe sequences short for the miss-heavy lookups of BPE and SentencePiece.
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t hash = Hash(key);
  Slot& s = slots_[Probe(key, hash)];
  if (s.id == kAbsent) {
    s.hash = hash;
    s.offset = static_cast<uint32_t>(arena_.size());
    s.length = static_cast<uint32_t>(key.size());
    arena_.append(key);
    ++size_;
  }
  s.id = id;
}

int32_t StringIdMap::Find(std::string_view key) const {
  if (slots_.empty()) return kAbsent;
  return slots_[Probe(key, Hash(key))].id;
}

}  // namespace ember
