#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace ember {

SpecialTokenMatcher::SpecialTokenMatcher(std::vector<Special> specials) : specials_(std::move(specials)) {
  nodes_.emplace_back();
  for (size_t i = 0; i < specials_.size(); ++i) {
    const std::string& text = specials_[i].text;
    if (text.empty()) continue;
    first_byte_[static_cast<uint8_t>(text[0])] = true;
    int32_t node = 0;
    for (const char ch : text) {
      const uint8_t b = static_cast<uint8_t>(ch);
      int32_t next = Child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, int32_t{-1})),
                    std::make_pair(b, next));
        nodes_.emplace_back();  // after the insert: `kids` may dangle once nodes_ grows
      }
      node = next;
    }
    nodes_[node].specials.push_back(static_cast<int32_t>(i));
  }
}

int32_t SpecialTokenMatcher::Child(int32_t node, uint8_t byte) const {
  const auto& kids = nodes_[node].children;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, int32_t{-1}));
  return (it != kids.end() && it->first == byte) ? it->second : -1;
}

// Calls fn(special, begin, end) for every occurrence of every special token's text in `text`, by start
// position, shorter matches first.
template <class Fn>
void SpecialTokenMatcher::ForEachOccurrence(std::string_view text, Fn&& fn) const {
  for (size_t p = 0; p < text.size(); ++p) {
    if (!first_byte_[static_cast<uint8_t>(text[p])]) continue;
    int32_t node = 0;
    for (size_t q = p; q < text.size(); ++q) {
      node = Child(node, static_cast<uint8_t>(text[q]));
      if (node < 0) break;
      for (const int32_t s : nodes_[node].specials) fn(s, p, q + 1);
    }
  }
}

void SpecialTokenMatcher::Partition(std::string_view text, bool parse_special, std::vector<Piece>& out) const {
  out.clear();
  if (text.empty()) return;
  // 1. Every occurrence (priority, position) of every eligible special token.
  struct Occurrence {
    int32_t special;
    uint32_t pos;
  };
  std::vector<Occurrence> occ;
  ForEachOccurrence(text, [&](int32_t s, size_t p, size_t) {
    if (parse_special || !specials_[s].parse_only) occ.push_back({s, static_cast<uint32_t>(p)});
  });
  if (occ.empty()) {
    out.push_back({0, static_cast<uint32_t>(text.size()), -1});
    return;
  }
  // 2. Grant occurrences token by token (priority order), each leftmost first, if still free.
  std::sort(occ.begin(), occ.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.special != b.special ? a.special < b.special : a.pos < b.pos;
  });
  std::vector<uint8_t> taken(text.size(), 0);
  std::vector<Occurrence> granted;
  for (const Occurrence& o : occ) {
    const size_t len = specials_[o.special].text.size();
    if (std::any_of(taken.begin() + o.pos, taken.begin() + o.pos + len, [](uint8_t t) { return t != 0; })) continue;
    std::fill(taken.begin() + o.pos, taken.begin() + o.pos + len, 1);
    granted.push_back(o);
  }
  // 3. Pieces in text order.
  std::sort(granted.begin(), granted.end(), [](const Occurrence& a, const Occurrence& b) { return a.pos < b.pos; });
  uint32_t cursor = 0;
  for (const Occurrence& g : granted) {
    if (g.pos > cursor) out.push_back({cursor, g.pos, -1});
    const uint32_t end = g.pos + static_cast<uint32_t>(specials_[g.special].text.size());
    out.push_back({g.pos, end, specials_[g.special].id});
    cursor = end;
  }
  if (cursor < text.size()) out.push_back({cursor, static_cast<uint32_t>(text.size()), -1});
}

void SpecialTokenMatcher::ParseOnlyOccurrences(std::string_view text, std::vector<Piece>& out) const {
  out.clear();
  ForEachOccurrence(text, [&](int32_t sp, size_t p, size_t end) {
    if (specials_[sp].parse_only) out.push_back({static_cast<uint32_t>(p), static_cast<uint32_t>(end), specials_[sp].id});
  });
}

}  // namespace ember
