// The tokenizer as stored: exactly what the GGUF `tokenizer.ggml.*` keys hold. Built from a GGUF file or
// converted from a Hugging Face tokenizer.json + tokenizer_config.json, and written back into GGUF by
// `ember gen-model`. The runtime tokenizer (tokenizer.h) is constructed from this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace ember {

class GgufFile;
class GgufWriter;

// llama.cpp's token attribute types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

struct TokenizerSpec {
  std::string model;                 // "gpt2" (byte-level BPE) | "llama" (SentencePiece-style)
  std::string pre;                   // pre-tokenizer: "llama-bpe" | "qwen2" | "gpt-2" | "default" ...
  std::vector<std::string> tokens;   // id -> token text (byte-level BPE: GPT-2 byte-to-unicode mapped)
  std::vector<float> scores;         // SentencePiece scores (empty for gpt2)
  std::vector<int32_t> token_types;  // TokenType per id
  std::vector<std::string> merges;   // BPE merges "a b", in rank order (gpt2)
  int32_t bos_id = -1, eos_id = -1, eot_id = -1, eom_id = -1, pad_id = -1, unk_id = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;     // SentencePiece: prepend "▁" to the text
  std::string chat_template;         // tokenizer.chat_template (Jinja), may be empty
  std::string hf_name;               // where it came from, e.g. "llama3" (informational)
};

// Whether TokenizerSpecFromGguf copies the vocabulary's text (tokens and merges: hundreds of thousands
// of strings), or only sizes `tokens` (empty strings) and leaves `merges` empty, for callers that check
// a file's tokenizer without running it (CheckTokenizerSpec looks at counts and ids only). Every key is
// read and type-checked either way, so both report the same errors.
enum class VocabText { kCopy, kCountOnly };

// Reads tokenizer.ggml.* and tokenizer.chat_template; errors name the missing or mistyped key.
StatusOr<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& file, VocabText text = VocabText::kCopy);
// Converts a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json). `pre` selects the
// pre-tokenizer name llama.cpp uses for this family ("llama-bpe", "qwen2", "default" for gemma3). Both
// files are read whole through env (Env::ReadFile: regular files only, never through a link).
StatusOr<TokenizerSpec> TokenizerSpecFromHf(const std::string& tokenizer_json_path,
                                            const std::string& tokenizer_config_path, const std::string& pre,
                                            Env* env = Env::Default());
// Writes the keys llama.cpp reads.
void WriteTokenizerSpec(const TokenizerSpec& spec, GgufWriter& writer);

}  // namespace ember
