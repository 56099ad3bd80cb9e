#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace ember {
namespace {

// Key of the merge table: the (left, right) text hashes mixed asymmetrically ((a, b) != (b, a)).
inline uint64_t PairHash(uint64_t left, uint64_t right) {
  uint64_t x = left ^ ((right << 29) | (right >> 35));
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 31);
}

// Heap order: the best candidate (lowest rank, then leftmost) on top of a std::*_heap max-heap.
inline bool Worse(const BpeModel::Scratch::Candidate& a, const BpeModel::Scratch::Candidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

}  // namespace

int32_t BpeModel::FindRank(std::string_view left, std::string_view right, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const MergeSlot& s = slots_[i];
    if (s.rank < 0) return -1;
    if (s.tag != tag || s.left_len != left.size() || s.right_len != right.size()) continue;
    const char* t = merge_bytes_.data() + s.offset;
    if (left == std::string_view(t, left.size()) && right == std::string_view(t + left.size() + 1, right.size())) {
      return s.rank;
    }
  }
}

StatusOr<BpeModel> BpeModel::Build(const StringIdMap* tokens, const std::vector<std::string>& merges) {
  BpeModel m;
  m.tokens_ = tokens;
  const size_t n = merges.size();
  if (n > static_cast<size_t>(INT32_MAX) - 1) return InvalidArgument("tokenizer has too many merges");
  size_t bytes = 0;
  for (const std::string& merge : merges) bytes += merge.size();
  if (bytes > UINT32_MAX) return InvalidArgument("tokenizer merges are too large");
  m.merge_bytes_.reserve(bytes);
  m.merge_offsets_.reserve(n + 1);
  m.merge_offsets_.push_back(0);
  // A merge splits at its first space after the first byte (a left part may itself be a space). Symbols
  // never contain an ASCII space (the byte-level map moves it to U+0120), so only merges whose halves have
  // none can match, and for those this split is the one a lookup of "left right" implies. Malformed merges
  // (no space; llama.cpp keeps them as ("", "") which never matches) and halves too long for a slot (no
  // token is 64 KiB, so they could not match either) are not inserted.
  auto split = [](std::string_view merge) {
    const size_t space = merge.find(' ', 1);
    const bool ok = space != std::string_view::npos && space <= UINT16_MAX && merge.size() - space - 1 <= UINT16_MAX;
    return ok ? space : std::string_view::npos;
  };
  // Pass 1 (sequential): copy the texts and hash their halves.
  std::vector<uint64_t> hashes(n);
  for (size_t rank = 0; rank < n; ++rank) {
    const std::string_view merge = merges[rank];
    m.merge_bytes_ += merge;
    m.merge_offsets_.push_back(static_cast<uint32_t>(m.merge_bytes_.size()));
    const size_t space = split(merge);
    if (space == std::string_view::npos) continue;
    hashes[rank] = PairHash(StringIdMap::Hash(merge.substr(0, space)), StringIdMap::Hash(merge.substr(space + 1)));
  }
  // Pass 2: insert, prefetching slots a few merges ahead (the inserts are independent cache misses).
  size_t cap = 1024;
  while (cap < n + n / 2) cap *= 2;
  m.slots_.assign(cap, MergeSlot{});
  const size_t mask = cap - 1;
  constexpr size_t kAhead = 16;
  for (size_t rank = 0; rank < n; ++rank) {
    if (rank + kAhead < n) __builtin_prefetch(&m.slots_[hashes[rank + kAhead] & mask], 1);
    const std::string_view text = m.MergeText(static_cast<int32_t>(rank));
    const size_t space = split(text);
    if (space == std::string_view::npos) continue;
    const uint64_t h = hashes[rank];
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      MergeSlot& s = m.slots_[i];
      if (s.rank < 0) {
        s = MergeSlot{tag, static_cast<int32_t>(rank), m.merge_offsets_[rank], static_cast<uint16_t>(space),
                      static_cast<uint16_t>(text.size() - space - 1)};
        break;
      }
      // Duplicate merge: the first (lowest) rank wins, as in llama.cpp.
      if (s.tag == tag && m.MergeText(s.rank) == text) break;
    }
  }
  for (int b = 0; b < 256; ++b) {
    m.byte_chars_[b] = unicode::ByteToUnicode(static_cast<uint8_t>(b));
    m.byte_hash_[b] = StringIdMap::Hash(m.byte_chars_[b]);
    const char c = static_cast<char>(b);
    m.single_byte_token_[b] = tokens->Find(std::string_view(&c, 1));
  }
  return m;
}

void BpeModel::PushCandidate(Scratch& s, int32_t left) const {
  if (left < 0) return;
  const int32_t right = s.symbols[left].next;
  if (right < 0) return;
  const Scratch::Symbol& l = s.symbols[left];
  const Scratch::Symbol& r = s.symbols[right];
  const std::string_view enc = s.encoded;
  const int32_t rank = FindRank(enc.substr(l.start, l.len), enc.substr(r.start, r.len), PairHash(l.hash, r.hash));
  if (rank < 0) return;
  s.heap.push_back({rank, left, l.len, r.len});
  std::push_heap(s.heap.begin(), s.heap.end(), Worse);
}

void BpeModel::EmitSymbol(std::string_view text, uint64_t hash, std::vector<int32_t>& out) const {
  const int32_t id = tokens_->FindHashed(text, hash);
  if (id != StringIdMap::kAbsent) {
    out.push_back(id);
    return;
  }
  // Not a token: llama.cpp looks up each byte of the (byte-level encoded) text as a one-byte token.
  for (const char c : text) {
    const int32_t b = single_byte_token_[static_cast<uint8_t>(c)];
    if (b >= 0) out.push_back(b);
  }
}

bool BpeModel::EncodeWholeWord(std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
  s.encoded.clear();
  for (const char c : word) s.encoded += byte_chars_[static_cast<uint8_t>(c)];
  const int32_t id = tokens_->Find(s.encoded);
  if (id == StringIdMap::kAbsent) return false;
  out.push_back(id);
  return true;
}

void BpeModel::EncodeWord(std::string_view word, bool ignore_merges, Scratch& s, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges && EncodeWholeWord(word, s, out)) return;
  const int32_t n = static_cast<int32_t>(word.size());
  s.symbols.resize(n);
  s.encoded.clear();
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t b = static_cast<uint8_t>(word[i]);
    s.symbols[i] = {static_cast<uint32_t>(s.encoded.size()), static_cast<uint32_t>(byte_chars_[b].size()), i - 1,
                    i + 1 < n ? i + 1 : -1, byte_hash_[b]};
    s.encoded += byte_chars_[b];
  }
  const std::string_view enc = s.encoded;
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i) PushCandidate(s, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Worse);
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& left = s.symbols[c.left];
    // Stale if either side changed since the candidate was queued (merged into, or absorbed). A symbol's
    // start never moves, so its length identifies its text.
    if (left.len != c.left_len || left.next < 0) continue;
    Scratch::Symbol& right = s.symbols[left.next];
    if (right.len != c.right_len) continue;
    left.len += right.len;
    left.hash = StringIdMap::Hash(enc.substr(left.start, left.len));
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.len = 0;
    PushCandidate(s, left.prev);
    PushCandidate(s, c.left);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) {
    EmitSymbol(enc.substr(s.symbols[i].start, s.symbols[i].len), s.symbols[i].hash, out);
  }
}

}  // namespace ember
