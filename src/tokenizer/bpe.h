// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): turns one pre-tokenized word into token ids by
// applying merges in rank order, exactly as llama.cpp does (lowest rank first, leftmost first among equal
// ranks; symbols that end up outside the vocabulary fall back to single-byte tokens, skipping bytes that
// have none).
//
// Built for startup time: the only table built is merge (left, right) -> rank, keyed by the texts' hashes
// (no per-merge vocabulary lookups or interning, which cost ~0.2 s for Llama 3's 280k merges). During
// encoding a symbol is a span of the word's byte-level text (merging only ever joins neighbours) carrying
// the hash of its text, so a pair lookup combines two hashes, and a final symbol is looked up in the shared
// vocabulary map with the same hash.
// Thread-safety: immutable after Build; EncodeWord may run concurrently (each caller owns its Scratch).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_id_map.h"
#include "util/status.h"

namespace ember {

class BpeModel {
 public:
  // Per-call working memory, reused across the words of one Encode call.
  struct Scratch {
    struct Symbol {
      uint32_t start, len;  // span of `encoded`; len 0: merged into its left neighbour
      int32_t prev, next;
      uint64_t hash;  // StringIdMap::Hash of the span
    };
    struct Candidate {
      int32_t rank, left;
      uint32_t left_len, right_len;  // the pair as queued; changed lengths make it stale
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string encoded;  // the word's byte-level text
  };

  // `tokens` maps byte-level-mapped token texts to ids and must outlive the model; `merges` are
  // "left right" in rank order.
  static StatusOr<BpeModel> Build(const StringIdMap* tokens, const std::vector<std::string>& merges);

  // Appends the ids of `word` (raw UTF-8 bytes of one pre-tokenized word). With `ignore_merges` (llama3), a
  // word that is itself a vocabulary token is emitted as that token without merging.
  void EncodeWord(std::string_view word, bool ignore_merges, Scratch& scratch, std::vector<int32_t>& out) const;
  // If `word` (raw bytes) is itself a vocabulary token, appends it and returns true.
  bool EncodeWholeWord(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;

 private:
  // The merge text's place is kept in the slot so that checking a hit touches only the text itself.
  struct MergeSlot {
    uint32_t tag = 0;  // high 32 bits of the pair hash (the low bits pick the slot)
    int32_t rank = -1;  // -1: empty
    uint32_t offset = 0;  // the merge text: merge_bytes_[offset, offset + left_len + 1 + right_len)
    uint16_t left_len = 0, right_len = 0;
  };
  // Rank of the merge whose text is `left` + " " + `right`, or -1; `hash` is PairHash of their hashes.
  int32_t FindRank(std::string_view left, std::string_view right, uint64_t hash) const;
  std::string_view MergeText(int32_t rank) const {
    return std::string_view(merge_bytes_).substr(merge_offsets_[rank], merge_offsets_[rank + 1] - merge_offsets_[rank]);
  }
  void PushCandidate(Scratch& s, int32_t left) const;
  void EmitSymbol(std::string_view text, uint64_t hash, std::vector<int32_t>& out) const;

  const StringIdMap* tokens_ = nullptr;
  std::string merge_bytes_;              // all merge texts, concatenated in rank order
  std::vector<uint32_t> merge_offsets_;  // n_merges + 1
  std::vector<MergeSlot> slots_;         // open addressing, power-of-two size
  std::array<std::string, 256> byte_chars_;  // raw byte -> UTF-8 of its byte-level character
  std::array<uint64_t, 256> byte_hash_{};     // raw byte -> hash of byte_chars_
  std::array<int32_t, 256> single_byte_token_{};  // raw byte value as a 1-byte token text -> id or -1
};

}  // namespace ember
