// SentencePiece-style BPE over scores (GGUF tokenizer.ggml.model = "llama": Llama 2, Gemma 3), as llama.cpp
// runs it: the text (spaces already escaped to U+2581) is split into UTF-8 characters, then the adjacent
// pair whose concatenation is the highest-scoring vocabulary token is merged repeatedly (leftmost first
// among equal scores). Symbols that are not tokens at the end become byte tokens (<0xNN>).
// Thread-safety: immutable; Encode may run concurrently (each caller owns its Scratch).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/string_id_map.h"

namespace ember {

class SpmModel {
 public:
  struct Scratch {
    struct Symbol {
      uint32_t start, n;
      int32_t prev, next;
    };
    struct Candidate {
      float score;
      int32_t left, right;
      uint32_t size;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
  };

  // `tokens` maps token text -> id and must outlive the model; `scores` is indexed by id. `byte_tokens`:
  // raw byte -> id of its fallback token (<0xNN>, else the 1-byte text), or -1 to drop the byte.
  SpmModel(const StringIdMap* tokens, std::vector<float> scores, std::array<int32_t, 256> byte_tokens)
      : tokens_(tokens), scores_(std::move(scores)), byte_tokens_(byte_tokens) {}

  // Appends the ids of `text` (one special-token-free fragment, whitespace already escaped).
  void Encode(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const;

 private:
  void TryAddPair(std::string_view text, Scratch& s, int32_t left, int32_t right) const;

  const StringIdMap* tokens_;
  std::vector<float> scores_;
  std::array<int32_t, 256> byte_tokens_;
};

}  // namespace ember
