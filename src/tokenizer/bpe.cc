#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace ember {
namespace {

inline uint64_t PairKey(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}
// Full 64-bit mix: both halves of the key (left and right symbol ids, small integers) must reach the low
// bits used as the slot index.
inline size_t PairHash(uint64_t key) {
  key ^= key >> 31;
  key *= 0x9E3779B97F4A7C15ull;
  key ^= key >> 29;
  key *= 0xBF58476D1CE4E5B9ull;
  return static_cast<size_t>(key ^ (key >> 32));
}

// Heap order: the best candidate (lowest rank, then leftmost) on top of a std::*_heap max-heap.
inline bool Worse(const BpeModel::Scratch::Candidate& a, const BpeModel::Scratch::Candidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

}  // namespace

int32_t BpeModel::Intern(std::string_view text) {
  const int32_t found = symbols_.Find(text);
  if (found != StringIdMap::kAbsent) return found;
  const int32_t sid = n_tokens_ + static_cast<int32_t>(extra_texts_.size());
  extra_texts_.emplace_back(text);
  symbols_.Set(text, sid);
  return sid;
}

void BpeModel::AddMerge(int32_t left, int32_t right, int32_t rank, int32_t result) {
  const uint64_t key = PairKey(left, right);
  const size_t mask = pairs_.size() - 1;
  for (size_t i = PairHash(key) & mask;; i = (i + 1) & mask) {
    if (pairs_[i].key == key) return;  // duplicate merge: the first (lowest) rank wins, as in llama.cpp
    if (pairs_[i].key == ~uint64_t{0}) {
      pairs_[i] = PairEntry{key, rank, result};
      return;
    }
  }
}

const BpeModel::PairEntry* BpeModel::FindMerge(int32_t left, int32_t right) const {
  const uint64_t key = PairKey(left, right);
  const size_t mask = pairs_.size() - 1;
  for (size_t i = PairHash(key) & mask;; i = (i + 1) & mask) {
    if (pairs_[i].key == key) return &pairs_[i];
    if (pairs_[i].key == ~uint64_t{0}) return nullptr;
  }
}

StatusOr<BpeModel> BpeModel::Build(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
  BpeModel m;
  m.n_tokens_ = static_cast<int32_t>(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) m.symbols_.Set(tokens[i], static_cast<int32_t>(i));
  size_t cap = 1024;
  while (cap < merges.size() * 2) cap *= 2;
  m.pairs_.assign(cap, PairEntry{});
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& merge = merges[rank];
    // Split at the first space after the first byte (a merge's left part may itself be a space).
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) continue;  // malformed: llama.cpp keeps it as ("", "") which never matches
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    const int32_t l = m.Intern(left), r = m.Intern(right);
    const int32_t result = m.Intern(std::string(left) + std::string(right));
    m.AddMerge(l, r, static_cast<int32_t>(rank), result);
  }
  for (int b = 0; b < 256; ++b) {
    m.byte_chars_[b] = unicode::ByteToUnicode(static_cast<uint8_t>(b));
    m.byte_symbol_[b] = m.Intern(m.byte_chars_[b]);
    const char c = static_cast<char>(b);
    const int32_t id = m.symbols_.Find(std::string_view(&c, 1));
    m.single_byte_token_[b] = id < m.n_tokens_ ? id : -1;
  }
  return m;
}

void BpeModel::PushCandidate(Scratch& s, int32_t left) const {
  if (left < 0) return;
  const int32_t right = s.symbols[left].next;
  if (right < 0) return;
  const int32_t ls = s.symbols[left].sid, rs = s.symbols[right].sid;
  const PairEntry* e = FindMerge(ls, rs);
  if (e == nullptr) return;
  s.heap.push_back({e->rank, left, ls, rs});
  std::push_heap(s.heap.begin(), s.heap.end(), Worse);
}

void BpeModel::EmitSymbol(int32_t sid, std::vector<int32_t>& out) const {
  if (sid < n_tokens_) {
    out.push_back(sid);
    return;
  }
  // Not a token: llama.cpp looks up each byte of the (byte-level encoded) text as a one-byte token.
  for (const char c : extra_texts_[sid - n_tokens_]) {
    const int32_t id = single_byte_token_[static_cast<uint8_t>(c)];
    if (id >= 0) out.push_back(id);
  }
}

bool BpeModel::EncodeWholeWord(std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
  s.encoded.clear();
  for (const char c : word) s.encoded += byte_chars_[static_cast<uint8_t>(c)];
  const int32_t id = symbols_.Find(s.encoded);
  if (id == StringIdMap::kAbsent || id >= n_tokens_) return false;
  out.push_back(id);
  return true;
}

void BpeModel::EncodeWord(std::string_view word, bool ignore_merges, Scratch& s, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges && EncodeWholeWord(word, s, out)) return;
  const int32_t n = static_cast<int32_t>(word.size());
  s.symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    s.symbols[i] = {byte_symbol_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i) PushCandidate(s, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Worse);
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& left = s.symbols[c.left];
    // Stale if either side changed since the candidate was queued (merged into, or absorbed).
    if (left.sid != c.left_sid || left.next < 0) continue;
    Scratch::Symbol& right = s.symbols[left.next];
    if (right.sid != c.right_sid) continue;
    left.sid = FindMerge(c.left_sid, c.right_sid)->result;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.sid = -1;
    PushCandidate(s, left.prev);
    PushCandidate(s, c.left);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) EmitSymbol(s.symbols[i].sid, out);
}

}  // namespace ember
