// Byte-level BPE pre-tokenizers: split text into the "words" BPE merges never cross. Each kind reproduces
// llama.cpp's hand-written matcher for the regex the model's tokenizer.json declares (llama.cpp does not
// run these regexes through a regex engine; its matchers are the reference, including their corner cases
// at fragment ends). Supported `tokenizer.ggml.pre` names:
//   llama3   (llama-bpe, llama3, llama-v3, ...)
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2    (qwen2, deepseek-r1-qwen, ...): as llama3 but \p{N} (one digit per word)
//   qwen35   (qwen35: Qwen3.5/3.6): as qwen2 but combining marks count as letters: [\p{L}\p{M}]+ for the letter
//            run, [^\s\p{L}\p{M}\p{N}]+ for the punctuation run (the optional lead char still admits \p{M})
//   gpt2     (gpt-2, mpt, olmo, ...): 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Stateless; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/unicode.h"
#include "util/status.h"

namespace ember {

enum class PreTokenizerKind { kLlama3, kQwen2, kQwen35, kGpt2 };

struct PreTokenizerInfo {
  PreTokenizerKind kind;
  bool clean_spaces;  // llama.cpp's detokenizer cleans up spaces (" ." -> ".", ...) for this name
};

// Maps a GGUF `tokenizer.ggml.pre` name to the matcher llama.cpp uses for it; Unimplemented otherwise.
StatusOr<PreTokenizerInfo> PreTokenizerFromName(const std::string& pre);

// Splits `cls` (the classes of a text's code points, see unicode.h; `cps` the code points) into words.
// Appends to `word_ends` the exclusive end index (in code points) of each word, in order.
void SplitWords(PreTokenizerKind kind, std::span<const uint32_t> cps, std::span<const unicode::CpClass> cls,
                std::vector<uint32_t>& word_ends);

}  // namespace ember
