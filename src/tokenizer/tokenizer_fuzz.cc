// libFuzzer target for the tokenizer on arbitrary bytes, with real vocabularies: the Llama 3 (byte-level
// BPE, llama-bpe), Qwen3 (byte-level BPE, qwen2) and Gemma 3 (SentencePiece-style BPE) tokenizers from
// the vocab-only GGUFs that `ember gen-model --vocab-only` writes at fuzz-build time (build-fuzz/vocab-*.gguf,
// or $EMBER_FUZZ_VOCAB_DIR). The first input byte picks the vocabulary and add_special; the rest is the
// text, encoded with and without special-token parsing, then decoded, detokenized and streamed back.
// Checked: nothing crashes, every id is in the vocabulary, the streamed text equals the sanitized
// Decode, and valid UTF-8 survives Encode(parse_special = false) -> Decode unchanged (for SentencePiece
// vocabularies, unless it holds U+2581, SentencePiece's own sign for a space).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

constexpr const char* kFamilies[] = {"llama3", "qwen3", "gemma3", "qwen35"};
constexpr int kNumFamilies = 4;
std::unique_ptr<ember::Tokenizer> g_tok[kNumFamilies];

// Words longer than this make BPE merging quadratic: legitimately slow, not a finding.
constexpr size_t kMaxTextBytes = 4096;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
  __builtin_trap();
}

void Exercise(const ember::Tokenizer& tok, std::string_view text, bool add_special) {
  const std::vector<int32_t> plain = tok.Encode(text, add_special, /*parse_special=*/false);
  const std::vector<int32_t> special = tok.Encode(text, add_special, /*parse_special=*/true);
  for (const auto* ids : {&plain, &special}) {
    for (int32_t id : *ids) Check(id >= 0 && id < tok.n_vocab(), "Encode returned an id outside the vocabulary");
    for (bool render : {false, true}) {
      const std::string decoded = tok.Decode(*ids, render);
      (void)tok.Detokenize(*ids, render);
      ember::StreamingDetokenizer stream(tok, render, /*strip_leading_space=*/true);  // as Decode
      std::string streamed;
      for (int32_t id : *ids) streamed += stream.Push(id);
      streamed += stream.Flush();
      Check(streamed == ember::unicode::SanitizeUtf8(decoded), "streamed text differs from SanitizeUtf8(Decode)");
    }
  }
  // SentencePiece writes a space as U+2581, so a text holding U+2581 itself cannot come back unchanged.
  const bool spm_space = tok.spec().model == "llama" && text.find("\xE2\x96\x81") != std::string_view::npos;
  if (!add_special && !spm_space && ember::unicode::SanitizeUtf8(text) == text) {
    Check(tok.Decode(plain, /*render_special=*/false) == text, "Decode(Encode(text)) != text for valid UTF-8");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("EMBER_FUZZ_VOCAB_DIR");
  const std::string dir = env != nullptr ? env : EMBER_FUZZ_VOCAB_DIR;
  for (int i = 0; i < kNumFamilies; ++i) {
    const std::string path = dir + "/vocab-" + kFamilies[i] + ".gguf";
    auto tok = ember::LoadTokenizerFromGguf(path);
    if (!tok.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: %s (make fuzz-build writes it)\n", tok.status().ToString().c_str());
      std::exit(1);
    }
    g_tok[i] = std::move(tok).value();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > kMaxTextBytes + 1) return 0;
  const ember::Tokenizer& tok = *g_tok[(data[0] & 3) % kNumFamilies];
  const bool add_special = (data[0] & 4) != 0;
  Exercise(tok, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), add_special);
  return 0;
}
