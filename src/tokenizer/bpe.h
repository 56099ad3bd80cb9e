// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): turns one pre-tokenized word into token ids by
// applying merges in rank order, exactly as llama.cpp does (lowest rank first, leftmost first among equal
// ranks; symbols that end up outside the vocabulary fall back to single-byte tokens, skipping bytes that
// have none).
//
// Every string that a merge can produce or consume is interned once at build time into a "symbol id";
// the merge table maps a (left, right) symbol pair to (rank, merged symbol), so the merge loop compares
// integers instead of building strings. Vocabulary tokens keep their token id as symbol id.
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
      int32_t sid, prev, next;
    };
    struct Candidate {
      int32_t rank, left, left_sid, right_sid;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string encoded;
  };

  // `tokens` are byte-level-mapped token texts (id = index); `merges` are "left right" in rank order.
  static StatusOr<BpeModel> Build(const std::vector<std::string>& tokens, const std::vector<std::string>& merges);

  // Appends the ids of `word` (raw UTF-8 bytes of one pre-tokenized word). With `ignore_merges` (llama3), a
  // word that is itself a vocabulary token is emitted as that token without merging.
  void EncodeWord(std::string_view word, bool ignore_merges, Scratch& scratch, std::vector<int32_t>& out) const;
  // If `word` (raw bytes) is itself a vocabulary token, appends it and returns true.
  bool EncodeWholeWord(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;

 private:
  struct PairEntry {
    uint64_t key = ~uint64_t{0};  // (left_sid << 32) | right_sid; all ones = empty
    int32_t rank = 0;
    int32_t result = 0;
  };
  int32_t Intern(std::string_view text);
  void AddMerge(int32_t left, int32_t right, int32_t rank, int32_t result);
  const PairEntry* FindMerge(int32_t left, int32_t right) const;
  void PushCandidate(Scratch& s, int32_t left) const;
  void EmitSymbol(int32_t sid, std::vector<int32_t>& out) const;

  int32_t n_tokens_ = 0;
  StringIdMap symbols_;                      // symbol text -> symbol id (tokens: their id)
  std::vector<std::string> extra_texts_;     // texts of symbol ids >= n_tokens_
  std::array<std::string, 256> byte_chars_;  // raw byte -> UTF-8 of its byte-level character
  std::array<int32_t, 256> byte_symbol_{};   // raw byte -> symbol id of its byte-level character
  std::array<int32_t, 256> single_byte_token_{};  // raw byte value as a 1-byte token text -> id or -1
  std::vector<PairEntry> pairs_;             // open addressing, power-of-two size
};

}  // namespace ember
