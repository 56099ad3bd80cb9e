// A model's vocabulary as the grammar matchers see it, built once per model and shared (immutable) by
// every constraint: token id -> the bytes it adds to the text, which ids end generation, and a byte trie
// of all the text tokens laid out in preorder, so a mask is one linear pass that skips a whole subtree
// on the first byte the grammar rejects.
//
// A token with no bytes (control tokens, unused ids) or longer than kMaxPieceBytes never matches text;
// end-of-generation tokens are allowed by the matcher exactly when the grammar is complete.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::grammar {

class Vocabulary {
 public:
  static constexpr size_t kMaxPieceBytes = 1024;

  // pieces[id]: the bytes token `id` renders as in generated text. Control tokens (is_control[id]) and
  // end-of-generation ids match no text whatever their piece says. Ids out of range in `eog` are ignored.
  static std::shared_ptr<const Vocabulary> Create(std::vector<std::string> pieces, const std::vector<bool>& is_control,
                                                  const std::vector<int32_t>& eog);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  // Empty for a token that never matches text.
  std::string_view piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool IsEog(int32_t id) const { return id >= 0 && id < size() && is_eog_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  // The trie, nodes in preorder. Node i reads byte `byte` at depth `depth` (1 = a token's first byte);
  // its subtree is [i, end); tokens whose piece ends at it are trie_tokens()[tok_begin(i), tok_begin(i+1)).
  struct Node {
    uint32_t end;
    uint32_t tok_begin;
    uint16_t depth;
    uint8_t byte;
  };
  const std::vector<Node>& trie() const { return nodes_; }  // plus one sentinel at the end
  size_t trie_size() const { return nodes_.size() - 1; }
  const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }
  size_t max_depth() const { return max_depth_; }

 private:
  Vocabulary() = default;
  std::vector<std::string> pieces_;
  std::vector<bool> is_eog_;
  std::vector<int32_t> eog_ids_;
  std::vector<Node> nodes_;
  std::vector<int32_t> trie_tokens_;
  size_t max_depth_ = 0;
};

}  // namespace ember::grammar
