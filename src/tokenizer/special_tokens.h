// Splits text at special tokens (control, user-defined and unknown tokens) before the tokenizer proper
// runs, with llama.cpp's exact semantics: special tokens are tried one at a time in priority order (longest
// text first; llama.cpp's std::sort order among equal lengths), each taking its leftmost non-overlapping
// occurrences in the text that earlier tokens left over. Control and unknown tokens take part only when
// the caller parses special tokens; user-defined tokens always do.
//
// Implementation: one pass over the text with a byte trie finds every occurrence of every special token;
// the occurrences are then granted in priority order, each only if none of its bytes is already taken.
// That yields the same result as llama.cpp's token-by-token rescans in O(text x longest token) instead of
// O(text x number of special tokens) (Gemma 3 has ~6,400 of them).
// Thread-safety: immutable after construction; Partition may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class SpecialTokenMatcher {
 public:
  struct Special {
    int32_t id;
    std::string text;
    bool parse_only;  // control / unknown: matched only with parse_special
  };
  // A piece of the partitioned text: a special token, or (token < 0) raw text [begin, end).
  struct Piece {
    uint32_t begin, end;
    int32_t token;
  };

  SpecialTokenMatcher() = default;
  // `specials` in priority order (see header comment); empty texts are ignored.
  explicit SpecialTokenMatcher(std::vector<Special> specials);

  // Replaces `out` with the pieces of `text`, in order; adjacent raw pieces are not merged, empty ones are
  // never produced.
  void Partition(std::string_view text, bool parse_special, std::vector<Piece>& out) const;
  // Replaces `out` with every occurrence of a parse-only (control / unknown) token in `text`, overlapping
  // ones included, whether or not Partition would grant it; ordered by begin.
  void ParseOnlyOccurrences(std::string_view text, std::vector<Piece>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node, sorted by byte
    std::vector<int32_t> specials;                      // indexes into specials_ ending here
  };
  int32_t Child(int32_t node, uint8_t byte) const;
  template <class Fn>
  void ForEachOccurrence(std::string_view text, Fn&& fn) const;

  std::vector<Special> specials_;
  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::array<bool, 256> first_byte_{};
};

}  // namespace ember
