#include "tokenizer/string_id_map.h"

#include <xxhash.h>

namespace ember {

uint64_t StringIdMap::Hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

size_t StringIdMap::Probe(std::string_view key, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id == kAbsent) return i;
    if (s.tag == tag && std::string_view(arena_.data() + s.offset, s.length) == key) return i;
  }
}

void StringIdMap::Rehash(size_t n_slots) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(n_slots, Slot{});
  const size_t mask = n_slots - 1;
  for (const Slot& s : old) {
    if (s.id == kAbsent) continue;
    size_t i = Hash(std::string_view(arena_.data() + s.offset, s.length)) & mask;
    while (slots_[i].id != kAbsent) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void StringIdMap::Reserve(size_t n, size_t key_bytes) {
  arena_.reserve(arena_.size() + key_bytes);
  // Load factor <= 1/2 keeps probe sequences short for the miss-heavy lookups of BPE and SentencePiece.
  size_t cap = 1024;
  while (cap < (size_ + n) * 2) cap *= 2;
  if (cap > slots_.size()) Rehash(cap);
}

void StringIdMap::Set(std::string_view key, int32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 1024 : slots_.size() * 2);
  SetHashed(key, Hash(key), id);
}

void StringIdMap::SetHashed(std::string_view key, uint64_t hash, int32_t id) {
  Slot& s = slots_[Probe(key, hash)];
  if (s.id == kAbsent) {
    s.tag = static_cast<uint32_t>(hash >> 32);
    s.offset = static_cast<uint32_t>(arena_.size());
    s.length = static_cast<uint32_t>(key.size());
    arena_.append(key);
    ++size_;
  }
  s.id = id;
}

void StringIdMap::SetIndexed(std::span<const std::string> keys) {
  size_t bytes = 0;
  for (const std::string& k : keys) bytes += k.size();
  Reserve(keys.size(), bytes);
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = Hash(keys[i]);
  const size_t mask = slots_.size() - 1;
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) __builtin_prefetch(&slots_[hashes[i + kAhead] & mask], 1);
    SetHashed(keys[i], hashes[i], static_cast<int32_t>(i));
  }
}

int32_t StringIdMap::Find(std::string_view key) const { return FindHashed(key, Hash(key)); }

int32_t StringIdMap::FindHashed(std::string_view key, uint64_t hash) const {
  if (slots_.empty()) return kAbsent;
  return slots_[Probe(key, hash)].id;
}

}  // namespace ember
