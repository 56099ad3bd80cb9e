#include "tokenizer/corpus.h"

#include <string_view>

namespace ember {
namespace {

// SplitMix64: tiny, fast, and identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  template <typename T, size_t N>
  const T& Pick(const T (&a)[N]) { return a[Below(N)]; }

 private:
  uint64_t s_;
};

const char* const kProse[] = {
    "The quick brown fox jumps over the lazy dog.", "Tokenizers split text into pieces called tokens.",
    "It was the best of times, it was the worst of times.", "Hello, world!", "What's the capital of France?",
    "She said: \"I'll be there at 5 p.m.\"", "Numbers like 3.14159 and 2,718 appear everywhere.",
    "e-mail me at someone@example.com, or visit https://example.org/path?q=1&r=2.",
    "The U.S.A. and the E.U. signed the treaty in 1999...", "Wait -- what?! No way...",
    "inference server with a tiered prefix cache", "A B C D E F G", "hello   world", "don't stop believing",
};
const char* const kCode[] = {
    "int main() {\n  return 0;\n}\n", "def f(x):\n\treturn x ** 2\n", "for (size_t i = 0; i < n; ++i) {",
    "std::vector<int32_t> ids = tok.Encode(text);", "SELECT * FROM users WHERE id = 42;",
    "<div class=\"main\"><p>Hi</p></div>", "const add = (a, b) => a + b;", "#include <stdio.h>\n",
    "if err != nil {\n\treturn err\n}", "fn main() -> Result<(), Box<dyn Error>> {", "x = {'a': [1, 2, 3]}",
    "    indented    code\t\twith\ttabs", "/* comment */ // another", "$ ls -la | grep '.cc$'",
    "a&&b||!c", "i++; j--; k **= 2;", "\"\\n\\t\\\\\"", "0x1F 0b1010 1e-9 6.02e23",
};
const char* const kScripts[] = {
    "你好世界", "日本語のテキストです。", "한국어 문장입니다", "東京タワーに行きました", "中文分词测试，标点符号！",
    "مرحبا بالعالم", "السلام عليكم ورحمة الله", "שלום עולם", "עברית היא שפה", "Привет, мир!", "Καλημέρα κόσμε",
    "नमस्ते दुनिया", "สวัสดีครับ", "Ελληνικά και русский", "ﬁ ﬂ ligatures", "Ⅻ ⅳ ① ② ¾ ²",
    "Ünïcödé Çàfé naïve résumé", "ǅemal ǈ ǋ titlecase", "ſtraße STRASSE", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙",
    "ᚠᚢᚦᚨᚱᚲ runes", "ꯀꯁꯂ Meitei", "𓀀𓀁 hieroglyphs", "㐀㐁 𠀀𠀁 rare han",
};
const char* const kEmoji[] = {
    "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇯🇵", "🤷🏻‍♀️", "😀😃😄", "🧑🏿‍💻", "✊🏾", "🫶", "👩‍❤️‍💋‍👨", "#️⃣", "©️ ™ ®",
};
const char* const kCombining[] = {
    "e\u0301", "a\u0308", "n\u0303", "e\u0301\u0302\u0323", "Z\u0351\u0357\u0310a\u0324l\u0334g\u0337o",
    "\u0301leading mark", "cafe\u0301", "o\u0338", "\u0915\u094D\u0937", "\u05D1\u05BC\u05B8",
};
const char* const kContractions[] = {
    "'s", "'S", "'ll", "'LL", "'Ll", "'re", "'RE", "'rE", "'ve", "'VE", "'d", "'D", "'m", "'M", "'t", "'T",
    "don't", "DON'T", "I'm", "I'M", "we're", "WE'RE", "they'll", "THEY'LL", "you've", "YOU'VE", "he'd",
    "HE'D", "it's", "IT'S", "'", "''", "'x", "rock 'n' roll", "' s", "'\u0131", "l'été",
};
const char* const kSpecialLike[] = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
    "<pad>", "<s>", "</s>", "<unk>", "<mask>", "[multimodal]", "<unused0>", "<unused99>", "<table>",
    "</table>", "<think>", "</think>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|repo_name|>", "<|file_sep|>", "<|reserved_special_token_5|>", "<start_of_image>",
    "<0x41>", "<0xFF>", "<|begin_of", "<|im_", "im_start|>", "<start_of", "_turn>", "<|", "|>", "<<|im_start|>>",
    "<|im_start|><|im_end|>", "<|eot_id", "<end_of_turn", "<|im_start|>user\nHi<|im_end|>\n",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>",
};
const char* const kSpaces[] = {
    " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n ",
    "\t \n", "\u00A0", "\u3000", "\u2009", "\u200B", "\uFEFF", " \t\n\r\x0B\x0C", "\u2028", "\xC2\x85",
};
const char* const kInvalid[] = {
    "\xFF", "\xC3", "abc\x80" "def", "\xE2\x82", "\xED\xA0\x80", "\xC0\x80", "\xF4\x90\x80\x80", "\xF8\x88",
    "ok\xC3(", "\xE0\x80\xAF", "x\xF0\x9F\x98", "\xFE\xFF",
};
const char* const kSeparators[] = {" ", "", "\n", "  ", "\t", ", ", ". ", "\n\n", " - ", "'"};

std::string RandomDigits(Rng& r, size_t len) {
  std::string s;
  for (size_t i = 0; i < len; ++i) s += static_cast<char>('0' + r.Below(10));
  return s;
}

std::string RandomCase(Rng& r, std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z' && r.Below(3) == 0) c = static_cast<char>(c - 32);
  }
  return s;
}

std::string RandomFragment(Rng& r) {
  switch (r.Below(9)) {
    case 0: return RandomCase(r, r.Pick(kProse));
    case 1: return r.Pick(kCode);
    case 2: return r.Pick(kScripts);
    case 3: return r.Pick(kEmoji);
    case 4: return r.Pick(kCombining);
    case 5: return r.Pick(kContractions);
    case 6: return r.Pick(kSpecialLike);
    case 7: return r.Pick(kSpaces);
    default: return RandomDigits(r, 1 + r.Below(20));
  }
}

template <size_t N>
void AddAll(std::vector<std::string>& out, const char* const (&items)[N]) {
  for (const char* s : items) out.emplace_back(s);
}

}  // namespace

std::vector<std::string> GenerateTokenizerCorpus(uint64_t seed, bool include_invalid_utf8) {
  Rng r(seed);
  std::vector<std::string> out;
  AddAll(out, kProse);
  AddAll(out, kCode);
  AddAll(out, kScripts);
  AddAll(out, kEmoji);
  AddAll(out, kCombining);
  AddAll(out, kContractions);
  AddAll(out, kSpecialLike);
  AddAll(out, kSpaces);
  // Every digit-run length, alone and in context.
  for (size_t len = 1; len <= 20; ++len) {
    for (const char* ctx : {"", " ", "x", "v1.", "$", "\n"}) out.push_back(ctx + RandomDigits(r, len));
    out.push_back(RandomDigits(r, len) + "th " + RandomDigits(r, len) + "%");
  }
  // Contractions after words, in every case.
  for (const char* c : kContractions) {
    out.push_back(std::string("word") + c + " next");
    out.push_back(std::string("WORD") + c);
    out.push_back(std::string(" ") + c + "  ");
  }
  // Whitespace runs around words.
  for (const char* a : kSpaces) {
    for (const char* b : {"", " ", "\n", "\t"}) out.push_back(std::string(a) + "word" + b + a);
  }
  // Very long words and runs.
  for (size_t n : {50, 100, 257, 600}) {
    out.push_back(std::string(n, 'a'));
    out.push_back(std::string(n, ' ') + "x");
    out.push_back(std::string(n, '\n'));
    out.push_back(RandomDigits(r, n));
  }
  std::string longword;
  for (int i = 0; i < 40; ++i) longword += "supercalifragilistic";
  out.push_back(longword);
  out.push_back(RandomCase(r, longword));
  // Random compositions fill the rest.
  while (out.size() < 2400) {
    std::string s;
    const size_t parts = 1 + r.Below(8);
    for (size_t i = 0; i < parts; ++i) {
      if (i > 0) s += r.Pick(kSeparators);
      s += RandomFragment(r);
    }
    out.push_back(std::move(s));
  }
  if (include_invalid_utf8) {
    AddAll(out, kInvalid);
    for (int i = 0; i < 60; ++i) out.push_back(RandomFragment(r) + r.Pick(kInvalid) + RandomFragment(r));
  }
  return out;
}

std::string GenerateMixedText(size_t bytes, uint64_t seed) {
  Rng r(seed);
  std::string s;
  s.reserve(bytes + 256);
  while (s.size() < bytes) {
    const size_t k = r.Below(100);
    if (k < 70) s += RandomCase(r, r.Pick(kProse));
    else if (k < 85) s += r.Pick(kCode);
    else if (k < 92) s += r.Pick(kScripts);
    else if (k < 95) s += r.Pick(kEmoji);
    else s += RandomDigits(r, 1 + r.Below(12));
    s += r.Below(8) == 0 ? "\n" : " ";
  }
  // Cut back to a character boundary at or below `bytes`.
  size_t cut = bytes;
  while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s;
}

}  // namespace ember
