#include "tokenizer/spm.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace ember {
namespace {

// Max-heap order: higher score on top; among equal scores the leftmost pair.
inline bool Worse(const SpmModel::Scratch::Candidate& a, const SpmModel::Scratch::Candidate& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

}  // namespace

void SpmModel::TryAddPair(std::string_view text, Scratch& s, int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return;
  const Scratch::Symbol& l = s.symbols[left];
  const uint32_t size = l.n + s.symbols[right].n;
  const int32_t id = tokens_->Find(text.substr(l.start, size));
  if (id == StringIdMap::kAbsent || static_cast<size_t>(id) >= scores_.size()) return;
  s.heap.push_back({scores_[id], left, right, size});
  std::push_heap(s.heap.begin(), s.heap.end(), Worse);
}

void SpmModel::Encode(std::string_view text, Scratch& s, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  s.symbols.clear();
  s.heap.clear();
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(unicode::Utf8SeqLen(static_cast<uint8_t>(text[off])), text.size() - off);
    const int32_t index = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(len), index - 1,
                         off + len == text.size() ? -1 : index + 1});
    off += len;
  }
  for (int32_t i = 1; i < static_cast<int32_t>(s.symbols.size()); ++i) TryAddPair(text, s, i - 1, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Worse);
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& left = s.symbols[c.left];
    Scratch::Symbol& right = s.symbols[c.right];
    // Stale if either side was merged since the pair was queued.
    if (left.n == 0 || right.n == 0 || left.n + right.n != c.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    TryAddPair(text, s, left.prev, c.left);
    TryAddPair(text, s, c.left, left.next);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) {
    const Scratch::Symbol& sym = s.symbols[i];
    const std::string_view piece = text.substr(sym.start, sym.n);
    const int32_t id = tokens_->Find(piece);
    if (id != StringIdMap::kAbsent) {
      out.push_back(id);
      continue;
    }
    for (const char c : piece) {
      const int32_t b = byte_tokens_[static_cast<uint8_t>(c)];
      if (b >= 0) out.push_back(b);
    }
  }
}

}  // namespace ember
