// The runtime tokenizer: text <-> token ids, identical to llama.cpp (llama_tokenize / llama_token_to_piece /
// llama_detokenize) for the vocabularies ember supports:
//   - byte-level BPE (spec.model == "gpt2") with the llama-bpe (Llama 3), qwen2 (Qwen 2/2.5/3), qwen35
//     (Qwen 3.5/3.6) and gpt-2 pre-tokenizers;
//   - SentencePiece-style BPE over scores (spec.model == "llama": Llama 2, Gemma 3) with byte fallback.
// Built from a TokenizerSpec (GGUF tokenizer.ggml.* keys, or a converted Hugging Face tokenizer). Like
// llama.cpp, a few token attributes are derived from token texts at load time: end-of-generation tokens
// (<|eot_id|>, <|im_end|>, <end_of_turn>, ...) and fill-in-the-middle tokens become control tokens.
//
// Thread-safety: immutable after Create; every method may be called concurrently from any thread.
// Invalid UTF-8 never fails: see docs/tokenizer.md for what each tokenizer does with it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_spec.h"
#include "util/status.h"

namespace ember {

class Tokenizer {
 public:
  // InvalidArgument for an inconsistent spec (sizes disagree, special id out of range), Unimplemented for
  // a tokenizer model or pre-tokenizer ember does not support.
  static StatusOr<std::unique_ptr<Tokenizer>> Create(const TokenizerSpec& spec);
  // The same without copying the spec (a Llama 3 spec is ~400k strings).
  static StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerSpec&& spec);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // llama_tokenize: `add_special` adds BOS (and EOS) when the spec says so; `parse_special` lets control
  // tokens written in the text (e.g. "<|im_start|>") become their ids (user-defined tokens always do).
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // Plain-text spans, for prompts that mix trusted markup with client text (a chat template around a
  // user's message): the markup's control tokens must parse, the client's "<|eot_id|>" must not, or a
  // user could forge turns. AsPlainText(s) inserts kTextMark after the first character of every
  // control/unknown token text in s (marks s already held are dropped first), so none can match there;
  // EncodeWithMarks(text) is Encode(text, add_special, /*parse_special=*/true) with the marks removed from
  // the text between special tokens before BPE. So a span that went through AsPlainText encodes as
  // Encode(span, ., /*parse_special=*/false) would, wherever the markup puts it; text without control
  // token strings is returned unchanged. Limit: a control token of a single character cannot be broken.
  static constexpr std::string_view kTextMark = "\xEF\xB7\x90";  // U+FDD0, a noncharacter: internal use only
  std::string AsPlainText(std::string_view text) const;
  std::vector<int32_t> EncodeWithMarks(std::string_view text, bool add_special) const;

  // The bytes token `id` stands for (llama_token_to_piece, no lstrip). Control/unknown tokens render as
  // their text only with `render_special`; unused/undefined tokens render as "". Out-of-range ids give "".
  // A piece may be an incomplete UTF-8 sequence (byte tokens).
  std::string_view TokenToPiece(int32_t id, bool render_special) const;

  // The text of token `id` as Decode renders it: TokenToPiece, except that SentencePiece user-defined
  // tokens made of U+2581 (Gemma's "▁▁", "▁▁▁", ...) read as spaces, which llama.cpp does not do.
  std::string_view TextPiece(int32_t id, bool render_special) const;
  // Concatenated TextPieces; for SentencePiece models with add_space_prefix, the first piece loses one
  // leading space (the one Encode added). Inverse of Encode(text, false, false) for valid UTF-8.
  std::string Decode(std::span<const int32_t> ids, bool render_special) const;
  // Exactly llama_detokenize(remove_special = false, unparse_special = render_special): Decode plus, for
  // models where llama.cpp does it (Llama 3, GPT-2), its clean-up of spaces (" ." -> "." ...).
  std::string Detokenize(std::span<const int32_t> ids, bool render_special) const;

  int32_t n_vocab() const { return static_cast<int32_t>(spec_.tokens.size()); }
  int32_t bos() const { return spec_.bos_id; }  // -1 if none
  int32_t eos() const { return spec_.eos_id; }
  int32_t eot() const { return eot_id_; }
  bool add_bos() const { return spec_.add_bos; }
  bool add_eos() const { return spec_.add_eos; }
  // End of generation: eos, eot, eom and the tokens llama.cpp recognises by text (<|eot_id|>, <|im_end|>,
  // <end_of_turn>, <|endoftext|>, ...).
  bool IsEog(int32_t id) const;
  // Control or unknown token (rendered only with render_special).
  bool IsControl(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  // Id of the token whose text is exactly `text`, or -1.
  int32_t TokenId(std::string_view text) const;
  const TokenizerSpec& spec() const { return spec_; }

 private:
  struct Impl;  // tokenizer_impl.h
  explicit Tokenizer(TokenizerSpec spec);
  // Decode (`text`: TextPiece) or llama_detokenize without clean-up (TokenToPiece).
  std::string DecodePieces(std::span<const int32_t> ids, bool render_special, bool text) const;
  std::vector<int32_t> EncodeImpl(std::string_view text, bool add_special, bool parse_special,
                                  bool strip_marks) const;
  // The Encode of one special-token-free fragment.
  void EncodeFragment(std::string_view text, bool prefix_space, struct EncodeScratch& scratch,
                      std::vector<int32_t>& out) const;

  TokenizerSpec spec_;
  int32_t eot_id_ = -1;
  std::vector<int32_t> eog_ids_;
  std::unique_ptr<Impl> impl_;
};

// The checks Tokenizer::Create makes before building anything (sizes, special ids inside the
// vocabulary, a supported model and pre-tokenizer), for callers that only ask whether a file's tokenizer
// would load (`ember models`): Ok, or what Create would answer.
Status CheckTokenizerSpec(const TokenizerSpec& spec);

// Reads the tokenizer of a GGUF file (tokenizer.ggml.* keys; a vocab-only file is enough).
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerFromGguf(const std::string& path);

// Incremental detokenizer for streaming: feed generated ids one at a time; each call returns only complete
// UTF-8 text, holding back the bytes of a character split across tokens. Ill-formed bytes come out as
// U+FFFD, so everything returned is valid UTF-8. The concatenation of all Push results and Flush equals
// SanitizeUtf8(Decode(ids)) (with `strip_leading_space` as Decode's SentencePiece rule; off by default
// because a generated continuation keeps its leading space).
// Not thread-safe (one per stream); the Tokenizer must outlive it.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false,
                                bool strip_leading_space = false)
      : tok_(tokenizer), render_special_(render_special), strip_(strip_leading_space) {}
  std::string Push(int32_t id);
  // Emits what is held back (an unfinished character becomes U+FFFD) and resets for a new stream.
  std::string Flush();

 private:
  const Tokenizer& tok_;
  bool render_special_;
  bool strip_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace ember
