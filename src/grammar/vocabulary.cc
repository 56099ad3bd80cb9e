#include "grammar/vocabulary.h"

#include <algorithm>
#include <numeric>

namespace ember::grammar {

std::shared_ptr<const Vocabulary> Vocabulary::Create(std::vector<std::string> pieces,
                                                     const std::vector<bool>& is_control,
                                                     const std::vector<int32_t>& eog) {
  std::shared_ptr<Vocabulary> v(new Vocabulary());
  const size_t n = pieces.size();
  v->is_eog_.assign(n, false);
  for (int32_t id : eog) {
    if (id >= 0 && static_cast<size_t>(id) < n && !v->is_eog_[static_cast<size_t>(id)]) {
      v->is_eog_[static_cast<size_t>(id)] = true;
      v->eog_ids_.push_back(id);
    }
  }
  std::sort(v->eog_ids_.begin(), v->eog_ids_.end());
  for (size_t id = 0; id < n; ++id) {
    const bool control = id < is_control.size() && is_control[id];
    if (control || v->is_eog_[id] || pieces[id].size() > kMaxPieceBytes) pieces[id].clear();
  }
  v->pieces_ = std::move(pieces);

  // Sorted by bytes, a piece comes right before its extensions: one pass builds the preorder trie.
  std::vector<int32_t> order;
  for (size_t id = 0; id < n; ++id) {
    if (!v->pieces_[id].empty()) order.push_back(static_cast<int32_t>(id));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string_view pa = v->pieces_[static_cast<size_t>(a)], pb = v->pieces_[static_cast<size_t>(b)];
    return pa != pb ? pa < pb : a < b;
  });
  std::vector<uint32_t> path;  // node index per depth - 1
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view p = v->pieces_[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    while (path.size() > common) {
      v->nodes_[path.back()].end = static_cast<uint32_t>(v->nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      path.push_back(static_cast<uint32_t>(v->nodes_.size()));
      v->nodes_.push_back({0, static_cast<uint32_t>(v->trie_tokens_.size()), static_cast<uint16_t>(d + 1),
                           static_cast<uint8_t>(p[d])});
    }
    v->trie_tokens_.push_back(id);  // onto the deepest node: its tokens are contiguous
    v->max_depth_ = std::max(v->max_depth_, p.size());
    prev = p;
  }
  while (!path.empty()) {
    v->nodes_[path.back()].end = static_cast<uint32_t>(v->nodes_.size());
    path.pop_back();
  }
  v->nodes_.push_back({static_cast<uint32_t>(v->nodes_.size() + 1), static_cast<uint32_t>(v->trie_tokens_.size()), 0, 0});
  return v;
}

}  // namespace ember::grammar
