// Private to src/tokenizer: the state behind Tokenizer, shared by tokenizer.cc (build, encode),
// tokenizer_decode.cc (pieces, decode) and token_attrs.cc (attributes derived from token texts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/string_id_map.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/word_cache.h"

namespace ember {

// llama.cpp's token attribute bits (llama_token_attr), derived from TokenType and token texts.
enum TokenAttr : uint8_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
};

struct EncodeScratch {
  std::vector<SpecialTokenMatcher::Piece> pieces;
  std::vector<uint32_t> cps;
  std::vector<unicode::CpClass> classes;
  std::vector<uint32_t> word_ends;
  std::vector<uint32_t> offsets;  // byte offset of each code point in `utf8`, plus the end
  std::string utf8;               // the fragment re-encoded from `cps`
  std::string escaped;            // SentencePiece: the fragment with spaces as U+2581
  BpeModel::Scratch bpe;
  SpmModel::Scratch spm;
};

struct Tokenizer::Impl {
  bool is_spm = false;
  PreTokenizerInfo pre{PreTokenizerKind::kLlama3, false};
  bool ignore_merges = false;  // llama3: a word that is a token is not merged
  bool clean_spaces = false;
  StringIdMap token_map;       // token text -> id
  std::optional<BpeModel> bpe;
  WordCache word_cache;        // BPE: word bytes -> ids (thread-safe, bounded)
  std::optional<SpmModel> spm;
  SpecialTokenMatcher specials;
  std::vector<uint8_t> attrs;  // TokenAttr bits per id
  std::vector<uint8_t> eog;    // 1 if end-of-generation
  std::string piece_bytes;     // all pieces (rendered as with render_special), concatenated
  std::vector<uint32_t> piece_offsets;  // n_vocab + 1
  // TextPiece for the few ids whose text differs from their piece (SentencePiece user-defined "▁" runs).
  std::vector<std::pair<int32_t, std::string>> text_overrides;  // sorted by id
};

// Result of deriving attributes the way llama.cpp's vocabulary loader does.
struct DerivedAttrs {
  std::vector<uint8_t> attrs;
  std::vector<int32_t> eog_ids;  // sorted
  int32_t eot_id = -1;
};
DerivedAttrs DeriveTokenAttrs(const TokenizerSpec& spec, const StringIdMap& token_map);

// The piece of `id` as llama_token_to_piece(special = true) renders it.
std::string RenderPiece(const TokenizerSpec& spec, bool is_spm, uint8_t attr, int32_t id);

}  // namespace ember
