#include "tokenizer/pretokenizer.h"

namespace ember {
namespace {

using unicode::CpClass;
using unicode::IsLetter;
using unicode::IsMark;
using unicode::IsNumber;
using unicode::IsWhitespace;

constexpr uint32_t kNone = 0xFFFFFFFF;  // "code point" past the end of the text

// Bounds-checked view of the text being split; past the end, class 0 and code point kNone.
struct Cursor {
  std::span<const uint32_t> cps;
  std::span<const CpClass> cls;
  uint32_t Cp(size_t i) const { return i < cps.size() ? cps[i] : kNone; }
  CpClass Cls(size_t i) const { return i < cls.size() ? cls[i] : CpClass{0}; }
};

inline uint32_t AsciiLower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Length of a contraction ('s 't 're 've 'm 'll 'd) at `pos`, or 0. Only ASCII letters can lower-case to
// these (checked against the Unicode case tables), so ASCII folding is exact for the (?i:...) variant.
size_t ContractionLen(const Cursor& c, size_t pos, bool ignore_case) {
  if (c.Cp(pos) != '\'' || pos + 1 >= c.cps.size()) return 0;
  const auto fold = [&](uint32_t x) { return ignore_case ? AsciiLower(x) : x; };
  const uint32_t a = fold(c.Cp(pos + 1));
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= c.cps.size()) return 0;
  const uint32_t b = fold(c.Cp(pos + 2));
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S) | \s+ at `pos` (after the other alternatives failed): returns the end of the match.
size_t WhitespaceRunEnd(const Cursor& c, size_t pos, bool stop_after_newline) {
  size_t n_ws = 0;
  size_t last_newline_end = 0;
  while (IsWhitespace(c.Cls(pos + n_ws))) {
    const uint32_t cp = c.Cp(pos + n_ws);
    if (stop_after_newline && (cp == '\r' || cp == '\n')) last_newline_end = pos + n_ws + 1;
    ++n_ws;
  }
  if (last_newline_end > 0) return last_newline_end;                       // \s*[\r\n]+
  if (n_ws > 1 && c.Cp(pos + n_ws) != kNone) return pos + n_ws - 1;        // \s+(?!\S): leave one space
  if (n_ws > 0) return pos + n_ws;                                         // \s+
  return pos + 1;                                                          // no alternative matched
}

// What distinguishes the llama3-style matchers: how many digits form a word (llama3: 3, qwen2/qwen35: 1),
// and whether combining marks (\p{M}) join letter runs and stay out of punctuation runs (qwen35 only).
struct Llama3Style {
  size_t max_digits;
  bool marks_are_letters;
};

size_t NextLlama3Word(const Cursor& c, size_t pos, Llama3Style style) {
  if (size_t n = ContractionLen(c, pos, /*ignore_case=*/true)) return pos + n;
  const uint32_t cp = c.Cp(pos);
  const CpClass cls = c.Cls(pos);
  // \p{L}, or [\p{L}\p{M}] for qwen35: the letter run [\p{L}\p{M}]+ and the punctuation run [^\s\p{L}\p{M}\p{N}]+
  const auto letter = [&](CpClass x) { return IsLetter(x) || (style.marks_are_letters && IsMark(x)); };
  // [^\r\n\p{L}\p{N}]?\p{L}+ (for qwen35 the optional lead may be a mark: it starts the run either way)
  if (!(cp == '\r' || cp == '\n' || IsNumber(cls)) && (letter(cls) || letter(c.Cls(pos + 1)))) {
    ++pos;
    while (letter(c.Cls(pos))) ++pos;
    return pos;
  }
  // \p{N}{1,max_digits}
  if (IsNumber(cls)) {
    const size_t start = pos;
    while (IsNumber(c.Cls(pos)) && pos - start < style.max_digits) ++pos;
    return pos;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*' (qwen35: [^\s\p{L}\p{M}\p{N}]+)
  CpClass next = cp == ' ' ? c.Cls(pos + 1) : cls;
  if (!(IsWhitespace(next) || letter(next) || IsNumber(next)) && cls != 0) {
    pos += (cp == ' ');
    while (!(IsWhitespace(next) || letter(next) || IsNumber(next)) && next != 0) next = c.Cls(++pos);
    while (c.Cp(pos) == '\r' || c.Cp(pos) == '\n') ++pos;
    return pos;
  }
  return WhitespaceRunEnd(c, pos, /*stop_after_newline=*/true);
}

size_t NextGpt2Word(const Cursor& c, size_t pos) {
  if (size_t n = ContractionLen(c, pos, /*ignore_case=*/false)) return pos + n;
  const uint32_t cp = c.Cp(pos);
  CpClass next = cp == ' ' ? c.Cls(pos + 1) : c.Cls(pos);
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
  const auto letter = [](CpClass x) { return IsLetter(x); };
  const auto number = [](CpClass x) { return IsNumber(x); };
  const auto other = [](CpClass x) { return !(IsWhitespace(x) || IsLetter(x) || IsNumber(x)) && x != 0; };
  for (auto pred : {+letter, +number, +other}) {
    if (!pred(next)) continue;
    pos += (cp == ' ');
    while (pred(next)) next = c.Cls(++pos);
    return pos;
  }
  return WhitespaceRunEnd(c, pos, /*stop_after_newline=*/false);
}

}  // namespace

StatusOr<PreTokenizerInfo> PreTokenizerFromName(const std::string& pre) {
  // Names as llama.cpp's vocabulary loader groups them (only the groups ember implements), with its
  // per-name clean_spaces flag.
  struct Entry {
    const char* name;
    PreTokenizerKind kind;
    bool clean_spaces;
  };
  static constexpr Entry kEntries[] = {
      {"llama3", PreTokenizerKind::kLlama3, true},      {"llama-v3", PreTokenizerKind::kLlama3, true},
      {"llama-bpe", PreTokenizerKind::kLlama3, true},   {"falcon3", PreTokenizerKind::kLlama3, true},
      {"falcon-h1", PreTokenizerKind::kLlama3, true},   {"pixtral", PreTokenizerKind::kLlama3, true},
      {"midm-2.0", PreTokenizerKind::kLlama3, true},    {"lfm2", PreTokenizerKind::kLlama3, true},
      {"dbrx", PreTokenizerKind::kLlama3, true},        {"smaug-bpe", PreTokenizerKind::kLlama3, true},
      {"qwen2", PreTokenizerKind::kQwen2, false},       {"deepseek-r1-qwen", PreTokenizerKind::kQwen2, false},
      {"kormo", PreTokenizerKind::kQwen2, false},       {"f2llmv2", PreTokenizerKind::kQwen2, false},
      {"megrez", PreTokenizerKind::kQwen2, true},       {"stablelm2", PreTokenizerKind::kQwen2, true},
      {"qwen35", PreTokenizerKind::kQwen35, false},
      {"gpt-2", PreTokenizerKind::kGpt2, true},         {"phi-2", PreTokenizerKind::kGpt2, true},
      {"olmo", PreTokenizerKind::kGpt2, true},
  };
  for (const Entry& e : kEntries) {
    if (pre == e.name) return PreTokenizerInfo{e.kind, e.clean_spaces};
  }
  return Unimplemented("pre-tokenizer '" + pre +
                       "' is not supported (supported: the llama-bpe, qwen2, qwen35 and gpt-2 families)");
}

void SplitWords(PreTokenizerKind kind, std::span<const uint32_t> cps, std::span<const CpClass> cls,
                std::vector<uint32_t>& word_ends) {
  const Cursor c{cps, cls};
  size_t pos = 0;
  while (pos < cps.size()) {
    switch (kind) {
      case PreTokenizerKind::kLlama3: pos = NextLlama3Word(c, pos, {3, false}); break;
      case PreTokenizerKind::kQwen2: pos = NextLlama3Word(c, pos, {1, false}); break;
      case PreTokenizerKind::kQwen35: pos = NextLlama3Word(c, pos, {1, true}); break;
      case PreTokenizerKind::kGpt2: pos = NextGpt2Word(c, pos); break;
    }
    word_ends.push_back(static_cast<uint32_t>(pos));
  }
}

}  // namespace ember
