// Unit tests of the tokenizer on small vocabularies built here, with expected outputs derived by hand from
// the algorithms' definitions (see the comments at each expectation).
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <thread>

#include "tokenizer/corpus.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace ember {
namespace {

using unicode::ByteToUnicode;

// A byte-level BPE vocabulary: ids 0..255 are the 256 byte characters (id == byte value), then `extra`
// tokens; `merges` in rank order.
TokenizerSpec ByteLevelSpec(const std::string& pre, std::vector<std::string> extra, std::vector<std::string> merges) {
  TokenizerSpec s;
  s.model = "gpt2";
  s.pre = pre;
  for (int b = 0; b < 256; ++b) s.tokens.push_back(ByteToUnicode(static_cast<uint8_t>(b)));
  for (auto& t : extra) s.tokens.push_back(t);
  s.token_types.assign(s.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  s.merges = std::move(merges);
  return s;
}

std::unique_ptr<Tokenizer> Make(const TokenizerSpec& spec) {
  auto t = Tokenizer::Create(spec);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

int32_t B(char c) { return static_cast<uint8_t>(c); }  // id of a byte token in ByteLevelSpec

std::vector<std::string> Words(PreTokenizerKind kind, const std::string& text) {
  std::vector<uint32_t> cps;
  unicode::DecodeUtf8Lenient(text, cps);
  std::vector<unicode::CpClass> cls;
  for (uint32_t cp : cps) cls.push_back(unicode::ClassOf(cp));
  std::vector<uint32_t> ends;
  SplitWords(kind, cps, cls, ends);
  std::vector<std::string> words;
  uint32_t begin = 0;
  for (uint32_t end : ends) {
    std::string w;
    for (uint32_t i = begin; i < end; ++i) unicode::AppendUtf8(cps[i], w);
    words.push_back(w);
    begin = end;
  }
  return words;
}

using W = std::vector<std::string>;

TEST(UnicodeTest, ClassesFollowUnicode151) {
  using unicode::ClassOf;
  EXPECT_TRUE(unicode::IsLetter(ClassOf('a')));
  EXPECT_TRUE(unicode::IsLetter(ClassOf(0x4E2D)));   // 中
  EXPECT_TRUE(unicode::IsLetter(ClassOf(0x2EBF0)));  // CJK Ext I, new in Unicode 15.1
  EXPECT_FALSE(unicode::IsLetter(ClassOf(0x1C89)));  // Cyrillic TJE: Unicode 16, unassigned in 15.1
  EXPECT_TRUE(unicode::IsNumber(ClassOf('7')));
  EXPECT_TRUE(unicode::IsNumber(ClassOf(0x00BD)));   // ½ is No
  EXPECT_TRUE(unicode::IsWhitespace(ClassOf(0x3000)));
  EXPECT_TRUE(unicode::IsWhitespace(ClassOf(0x85)));
  EXPECT_FALSE(unicode::IsWhitespace(ClassOf(0xFEFF)));  // not White_Space (JavaScript's \s says it is)
  EXPECT_FALSE(unicode::IsWhitespace(ClassOf(0x200B)));
  EXPECT_EQ(ClassOf(0x0301) & unicode::kClassCatMask, static_cast<uint8_t>(unicode::UCat::kMark));
}

TEST(UnicodeTest, LenientDecodeReplacesEachBadByte) {
  std::vector<uint32_t> cps;
  unicode::DecodeUtf8Lenient("a\xFF\xC3(\xE2\x82", cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{'a', 0xFFFD, 0xFFFD, '(', 0xFFFD, 0xFFFD}));
  unicode::DecodeUtf8Lenient("\xC0\x80\xED\xA0\x80\xF4\x90\x80\x80", cps);  // overlong, surrogate, > U+10FFFF
  EXPECT_EQ(cps, (std::vector<uint32_t>{0, 0xD800, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}));
}

TEST(UnicodeTest, SanitizeUsesMaximalSubparts) {
  EXPECT_EQ(unicode::SanitizeUtf8("a\xE2\x82" "b"), "a\uFFFD" "b");         // one FFFD for a cut-short E2 82
  EXPECT_EQ(unicode::SanitizeUtf8("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // surrogates: per byte
  EXPECT_EQ(unicode::SanitizeUtf8("\xF0\x9F\x98\x80ok"), "\xF0\x9F\x98\x80ok");
  EXPECT_EQ(unicode::CompleteUtf8Prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(unicode::CompleteUtf8Prefix("ab\xFF"), 3u);
}

TEST(PreTokenizerTest, Llama3Splits) {
  // Letters with one optional leading non-letter, digits in threes, punctuation runs eat trailing newlines,
  // a whitespace run before a word leaves its last space to the word.
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "Hello world's 12345 !!\n\n  x"),
            (W{"Hello", " world", "'s", " ", "123", "45", " !!\n\n", " ", " x"}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "WE'RE they'LL"), (W{"WE", "'RE", " they", "'LL"}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "a \r\n b"), (W{"a", " \r\n", " b"}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "a  "), (W{"a", "  "}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "1234567"), (W{"123", "456", "7"}));
}

TEST(PreTokenizerTest, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, "x 2024!"), (W{"x", " ", "2", "0", "2", "4", "!"}));
}

// qwen35 = qwen2 with [\p{L}\p{M}]+ letter runs and [^\s\p{L}\p{M}\p{N}]+ punctuation runs. Under qwen2 a
// combining mark (Mn/Mc/Me) is "punctuation": it may lead a letter run (the optional [^\r\n\p{L}\p{N}]),
// else it joins or starts a punctuation run. Under qwen35 it extends letter runs.
TEST(PreTokenizerTest, Qwen35MarksJoinLetters) {
  struct Case {
    std::string text;
    W qwen2, qwen35;
  };
  const Case cases[] = {
      // Decomposed accent: the mark ends "cafe" under qwen2 and is a word of its own.
      {"cafe\u0301 ok", {"cafe", "\u0301", " ok"}, {"cafe\u0301", " ok"}},
      // Devanagari: virama U+094D (Mn), vowel signs U+0947, U+0941, U+093F, U+093E (Mc/Mn).
      {"नमस्ते दुनिया", {"नमस", "्त", "े", " द", "ुन", "िय", "ा"}, {"नमस्ते", " दुनिया"}},
      // Thai: U+0E31, U+0E35 (Mn) each lead the letters after them under qwen2.
      {"สวัสดีครับ", {"สว", "ัสด", "ีคร", "ับ"}, {"สวัสดีครับ"}},
      // Arabic with harakat (fatha U+064E after every letter); the last one ends in a punctuation run.
      {"كَتَبَ", {"ك", "َت", "َب", "َ"}, {"كَتَبَ"}},
      // Hebrew points: sheva + dagesh (two marks) form a punctuation run under qwen2.
      {"בְּרֵאשִׁית", {"ב", "ְּ", "ר", "ֵאש", "ִׁ", "ית"}, {"בְּרֵאשִׁית"}},
      // After punctuation: qwen2 keeps the mark in the punctuation run; qwen35 ends the run before it.
      {"..\u0301 ok", {"..\u0301", " ok"}, {"..", "\u0301", " ok"}},
      // ... and a punctuation char followed by a mark is the optional lead of a qwen35 letter run.
      {"!\u0301a", {"!\u0301", "a"}, {"!\u0301a"}},
      // After a space: " ?[^\s...]+" under qwen2; a lead space before a letter run under qwen35.
      {"a \u0301b", {"a", " \u0301", "b"}, {"a", " \u0301b"}},
      // After a newline: \r and \n never lead a letter run, in either.
      {"a\n\u0301b", {"a", "\n", "\u0301b"}, {"a", "\n", "\u0301b"}},
      {"a\r\n\u0301\u0302", {"a", "\r\n", "\u0301\u0302"}, {"a", "\r\n", "\u0301\u0302"}},
      // A lone mark at the start: it leads a letter run in both, or is a run of its own.
      {"\u0301leading", {"\u0301leading"}, {"\u0301leading"}},
      {"\u0301\u0302x y", {"\u0301\u0302", "x", " y"}, {"\u0301\u0302x", " y"}},
      {"\u0301", {"\u0301"}, {"\u0301"}},
      // Digits stay one per word and marks never join them; an enclosing mark (Me) after '#'.
      {"12\u0301", {"1", "2", "\u0301"}, {"1", "2", "\u0301"}},
      {"#\u20E3!", {"#\u20E3!"}, {"#\u20E3", "!"}},
      // Contractions and whitespace behave as in qwen2.
      {"it's  e\u0301t\u00E9", {"it", "'s", " ", " e", "\u0301té"}, {"it", "'s", " ", " e\u0301té"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Words(PreTokenizerKind::kQwen2, c.text), c.qwen2) << c.text;
    EXPECT_EQ(Words(PreTokenizerKind::kQwen35, c.text), c.qwen35) << c.text;
  }
  // Without marks the two are the same matcher.
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, "x 2024! Hello\n\n  world's"),
            Words(PreTokenizerKind::kQwen2, "x 2024! Hello\n\n  world's"));
}

TEST(PreTokenizerTest, Qwen35NameAndFlags) {
  auto info = PreTokenizerFromName("qwen35");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->kind, PreTokenizerKind::kQwen35);
  EXPECT_FALSE(info->clean_spaces);  // as llama.cpp: clean_spaces = false for qwen35
  // Like qwen2, merges are not bypassed for whole-vocabulary words (llama.cpp's ignore_merges is llama3's).
  auto tok = Make(ByteLevelSpec("qwen35", {"ab"}, {}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("ab", false, false), (std::vector<int32_t>{B('a'), B('b')}));
}

TEST(PreTokenizerTest, Gpt2Splits) {
  EXPECT_EQ(Words(PreTokenizerKind::kGpt2, "Hello world's 12345 !!\n\n  x"),
            (W{"Hello", " world", "'s", " 12345", " !!", "\n\n ", " x"}));
  // Contractions are case-sensitive here.
  EXPECT_EQ(Words(PreTokenizerKind::kGpt2, "WE'RE"), (W{"WE", "'", "RE"}));
}

TEST(PreTokenizerTest, UnknownNameIsUnimplemented) {
  EXPECT_EQ(PreTokenizerFromName("default").status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(PreTokenizerFromName("llama-bpe").ok());
}

TEST(BpeTest, MergesApplyInRankOrder) {
  // ranks: 0 "l o", 1 "h e", 2 "l l". "hello": l+o (rank 0) first, then h+e; "l l" can no longer apply.
  auto tok = Make(ByteLevelSpec("gpt-2", {"lo", "he", "ll"}, {"l o", "h e", "l l"}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hello", false, false), (std::vector<int32_t>{257, B('l'), 256}));
  // Equal ranks: the leftmost pair merges first.
  EXPECT_EQ(tok->Encode("lll", false, false), (std::vector<int32_t>{258, B('l')}));
}

TEST(BpeTest, NonTokenMergeResultFallsBackToBytes) {
  auto tok = Make(ByteLevelSpec("gpt-2", {}, {"x y"}));  // "xy" is not a token
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("xy", false, false), (std::vector<int32_t>{B('x'), B('y')}));
}

TEST(BpeTest, Llama3IgnoresMergesForWholeTokens) {
  // "abc" is a token but no merge chain builds it: llama-bpe emits it whole, gpt-2 cannot.
  auto spec = ByteLevelSpec("llama-bpe", {"abc"}, {});
  EXPECT_EQ(Make(spec)->Encode("abc", false, false), (std::vector<int32_t>{256}));
  spec.pre = "gpt-2";
  EXPECT_EQ(Make(spec)->Encode("abc", false, false), (std::vector<int32_t>{B('a'), B('b'), B('c')}));
}

TEST(BpeTest, SpaceIsByteLevelMapped) {
  const std::string g = ByteToUnicode(' ');  // "Ġ"
  auto tok = Make(ByteLevelSpec("llama-bpe", {g + "w"}, {g + " w"}));
  EXPECT_EQ(tok->Encode("a w", false, false), (std::vector<int32_t>{B('a'), 256}));
  EXPECT_EQ(tok->Decode(tok->Encode("a w", false, false), false), "a w");
}

TEST(BpeTest, InvalidUtf8BecomesReplacementCharacterBytes) {
  auto tok = Make(ByteLevelSpec("llama-bpe", {}, {}));
  // Each bad byte is U+FFFD (EF BF BD) to the byte-level BPE, as in llama.cpp.
  EXPECT_EQ(tok->Encode("a\xFF" "b", false, false), tok->Encode("a\xEF\xBF\xBD" "b", false, false));
  EXPECT_EQ(tok->Encode("\xC3", false, false), (std::vector<int32_t>{0xEF, 0xBF, 0xBD}));
}

TEST(BpeTest, BosAndEosFollowTheSpec) {
  auto spec = ByteLevelSpec("llama-bpe", {"<s>", "</s>"}, {});
  spec.token_types[256] = spec.token_types[257] = static_cast<int32_t>(TokenType::kControl);
  spec.bos_id = 256;
  spec.eos_id = 257;
  spec.add_bos = true;
  auto tok = Make(spec);
  EXPECT_EQ(tok->Encode("a", true, false), (std::vector<int32_t>{256, B('a')}));
  EXPECT_EQ(tok->Encode("a", false, false), (std::vector<int32_t>{B('a')}));
  EXPECT_EQ(tok->Encode("", true, false), (std::vector<int32_t>{256}));
  spec.add_eos = true;
  EXPECT_EQ(Make(spec)->Encode("a", true, false), (std::vector<int32_t>{256, B('a'), 257}));
}

TEST(SpecialTokensTest, LongerTokensWinThenLeftmost) {
  // "<xx>" (control, longer) is matched before "a<x" (user-defined) even though "a<x" starts earlier.
  auto spec = ByteLevelSpec("gpt-2", {"<xx>", "a<x"}, {});
  spec.token_types[256] = static_cast<int32_t>(TokenType::kControl);
  spec.token_types[257] = static_cast<int32_t>(TokenType::kUserDefined);
  auto tok = Make(spec);
  EXPECT_EQ(tok->Encode("a<xx>", false, true), (std::vector<int32_t>{B('a'), 256}));
  // Without parse_special the control token is plain text; the user-defined one still matches.
  EXPECT_EQ(tok->Encode("a<xx>", false, false), (std::vector<int32_t>{257, B('x'), B('>')}));
  EXPECT_EQ(tok->Encode("<xx><xx>", false, true), (std::vector<int32_t>{256, 256}));
}

TEST(SpecialTokensTest, EndOfTurnTextsBecomeControlAndEog) {
  auto spec = ByteLevelSpec("qwen2", {"<|im_end|>", "<|fim_prefix|>", "<think>"}, {});
  for (int id : {256, 257, 258}) spec.token_types[id] = static_cast<int32_t>(TokenType::kUserDefined);
  auto tok = Make(spec);
  EXPECT_TRUE(tok->IsEog(256));
  EXPECT_TRUE(tok->IsControl(256));
  EXPECT_TRUE(tok->IsControl(257));   // FIM tokens become control, as in llama.cpp
  EXPECT_FALSE(tok->IsControl(258));  // other user-defined tokens stay
  EXPECT_FALSE(tok->IsEog(258));
  EXPECT_EQ(tok->Encode("<think>", false, false), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok->Encode("<|im_end|>", false, true), (std::vector<int32_t>{256}));
  EXPECT_EQ(tok->Encode("<|im_end|>", false, false).size(), 10u);
  EXPECT_EQ(tok->TokenToPiece(256, false), "");
  EXPECT_EQ(tok->TokenToPiece(256, true), "<|im_end|>");
  EXPECT_EQ(tok->TokenToPiece(258, false), "<think>");
}

TEST(DecodeTest, DetokenizeCleansSpacesLikeLlamaCpp) {
  auto tok = Make(ByteLevelSpec("gpt-2", {}, {}));
  const std::string text = "Hello , world ' s . it 's ok 'll";
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(tok->Decode(ids, false), text);
  // " ," " ." lose the space; " ' " becomes "'"; " 's" loses the space, " 'll" keeps it.
  EXPECT_EQ(tok->Detokenize(ids, false), "Hello, world's. it's ok 'll");
  // qwen2 vocabularies are not cleaned.
  auto qwen = Make(ByteLevelSpec("qwen2", {}, {}));
  EXPECT_EQ(qwen->Detokenize(qwen->Encode(text, false, false), false), text);
}

// A SentencePiece vocabulary: <unk>, <s>, </s>, 256 byte tokens (ids 3..258), then scored pieces.
TokenizerSpec SpmSpec() {
  TokenizerSpec s;
  s.model = "llama";
  s.pre = "default";
  auto add = [&](std::string t, float score, TokenType type) {
    s.tokens.push_back(std::move(t));
    s.scores.push_back(score);
    s.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, TokenType::kByte);
  }
  add("\xE2\x96\x81", -10, TokenType::kNormal);              // 259 ▁
  add("\xE2\x96\x81h", -3, TokenType::kNormal);             // 260 ▁h
  add("\xE2\x96\x81he", -1, TokenType::kNormal);            // 261 ▁he
  add("ll", -2, TokenType::kNormal);                        // 262
  add("o", -5, TokenType::kNormal);                         // 263
  add("h", -5, TokenType::kNormal);                         // 264
  add("e", -5, TokenType::kNormal);                         // 265
  add("l", -5, TokenType::kNormal);                         // 266
  s.unk_id = 0;
  s.bos_id = 1;
  s.eos_id = 2;
  s.add_bos = true;
  s.add_space_prefix = true;
  return s;
}

TEST(SpmTest, MergesByScoreWithSpacePrefix) {
  auto tok = Make(SpmSpec());
  ASSERT_NE(tok, nullptr);
  // "▁hello": ll (-2) merges first, then ▁h (-3), then ▁he (-1) becomes possible.
  EXPECT_EQ(tok->Encode("hello", true, false), (std::vector<int32_t>{1, 261, 262, 263}));
  EXPECT_EQ(tok->Decode(tok->Encode("hello", false, false), false), "hello");
  // Unknown characters fall back to byte tokens (é = C3 A9).
  EXPECT_EQ(tok->Encode("h\xC3\xA9", false, false), (std::vector<int32_t>{260, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->Decode(tok->Encode("h\xC3\xA9", false, false), false), "h\xC3\xA9");
  // Raw invalid bytes are kept as byte tokens (SentencePiece never decodes the text).
  EXPECT_EQ(tok->Encode("\xFF", false, false), (std::vector<int32_t>{259, 3 + 0xFF}));
}

TEST(SpmTest, SpacePrefixAfterSpecialTokens) {
  auto tok = Make(SpmSpec());
  // The text after a special token gets the space prefix again, as in llama.cpp.
  EXPECT_EQ(tok->Encode("<s>he", false, true), (std::vector<int32_t>{1, 261}));
  // Unparsed, "<s>" is text: "▁<s>he" has no mergeable pair ("he" is not a token) -> bytes and chars.
  EXPECT_EQ(tok->Encode("<s>he", false, false),
            (std::vector<int32_t>{259, 3 + '<', 3 + 's', 3 + '>', 264, 265}));
}

TEST(SpmTest, DetokenizeStripsTheAddedSpaceOnce) {
  auto tok = Make(SpmSpec());
  // "▁he" "▁he": the first piece's space is the one Encode added; the second is the text's.
  EXPECT_EQ(tok->Detokenize(std::vector<int32_t>{261, 261}, false), "he he");
  EXPECT_EQ(tok->Decode(tok->Encode(" he", false, false), false), " he");
  // Control tokens render only on request; BOS first still consumes the strip (llama.cpp's rule).
  EXPECT_EQ(tok->Detokenize(std::vector<int32_t>{1, 261}, false), " he");
  EXPECT_EQ(tok->Detokenize(std::vector<int32_t>{1, 261}, true), "<s> he");
}

TEST(TokenizerTest, LoadFromMissingFileIsAnError) {
  auto t = LoadTokenizerFromGguf("/nonexistent/ember/model.gguf");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
}

TEST(StreamingDetokenizerTest, HoldsBackSplitCharacters) {
  auto tok = Make(SpmSpec());
  StreamingDetokenizer d(*tok);
  EXPECT_EQ(d.Push(261), " he");
  EXPECT_EQ(d.Push(3 + 0xC3), "");
  EXPECT_EQ(d.Push(3 + 0xA9), "\xC3\xA9");
  EXPECT_EQ(d.Push(3 + 0xFF), "\uFFFD");  // can never become valid: replaced at once
  EXPECT_EQ(d.Push(3 + 0xE2), "");
  EXPECT_EQ(d.Flush(), "\uFFFD");
  StreamingDetokenizer strip(*tok, false, /*strip_leading_space=*/true);
  EXPECT_EQ(strip.Push(261), "he");
  EXPECT_EQ(strip.Push(261), " he");
}

TEST(TokenizerTest, CreateRejectsBadSpecs) {
  TokenizerSpec empty;
  empty.model = "gpt2";
  EXPECT_EQ(Tokenizer::Create(empty).status().code(), StatusCode::kInvalidArgument);
  auto spec = ByteLevelSpec("llama-bpe", {}, {});
  spec.bos_id = 999;
  EXPECT_EQ(Tokenizer::Create(spec).status().code(), StatusCode::kInvalidArgument);
  spec = ByteLevelSpec("llama-bpe", {}, {});
  spec.model = "t5";
  EXPECT_EQ(Tokenizer::Create(spec).status().code(), StatusCode::kUnimplemented);
  spec = ByteLevelSpec("default", {}, {});
  EXPECT_EQ(Tokenizer::Create(spec).status().code(), StatusCode::kUnimplemented);
}

// What `ember models` asks of a file's tokenizer without building one: Create's answer, before any work.
TEST(TokenizerTest, CheckTokenizerSpecAnswersAsCreateWould) {
  auto spec = ByteLevelSpec("llama-bpe", {}, {});
  EXPECT_TRUE(CheckTokenizerSpec(spec).ok());
  spec.model = "t5";
  EXPECT_EQ(CheckTokenizerSpec(spec).message(), "tokenizer model 't5' is not supported (supported: gpt2, llama)");
  spec = ByteLevelSpec("tekken", {}, {});
  EXPECT_EQ(CheckTokenizerSpec(spec).code(), StatusCode::kUnimplemented);
  EXPECT_NE(CheckTokenizerSpec(spec).message().find("pre-tokenizer 'tekken' is not supported"), std::string::npos);
  EXPECT_EQ(CheckTokenizerSpec(spec).message(), Tokenizer::Create(spec).status().message());
  spec = ByteLevelSpec("llama-bpe", {}, {});
  spec.eos_id = -7;
  EXPECT_EQ(CheckTokenizerSpec(spec).code(), StatusCode::kInvalidArgument);
}

TEST(TokenizerTest, ConcurrentEncodeMatchesSerial) {
  const std::string g = ByteToUnicode(' ');
  auto tok = Make(ByteLevelSpec("llama-bpe", {"he", "ll", g + "w"}, {"h e", "l l", g + " w"}));
  const auto corpus = GenerateTokenizerCorpus(7, /*include_invalid_utf8=*/true);
  std::vector<std::vector<int32_t>> serial;
  for (const auto& s : corpus) serial.push_back(tok->Encode(s, true, true));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < corpus.size(); i += 2) mismatches[t] += tok->Encode(corpus[i], true, true) != serial[i];
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

TEST(CorpusTest, IsDeterministicAndLargeEnough) {
  const auto a = GenerateTokenizerCorpus(1, false), b = GenerateTokenizerCorpus(1, false);
  EXPECT_GE(a.size(), 2000u);
  EXPECT_EQ(a, b);
  const std::string text = GenerateMixedText(100000, 3);
  EXPECT_EQ(text.size() <= 100000 && text.size() > 99990, true);
  EXPECT_EQ(unicode::SanitizeUtf8(text), text);
}

}  // namespace
}  // namespace ember
