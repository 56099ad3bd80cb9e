// Parity with llama.cpp (the peer in peers/llamacpp) for the qwen35 pre-tokenizer (Qwen3.5/3.6: combining
// marks join letter runs). Two vocab-only GGUFs from `ember gen-model --vocab-only --arch qwen3`: one with
// `--tokenizer qwen35` (tokenizer.ggml.pre = "qwen35") and one with `--tokenizer qwen3` (the same BPE, pre
// "qwen2"). On a hand-written corpus heavy in combining marks plus the generated tokenizer corpus, ember's
// ids must equal the peer's for both files, and the two pre-tokenizers must give different ids on some of
// the hand-written strings (else the test would not tell them apart).
// This test fails (never skips) when node, the peer, or the ember binary is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "tokenizer/corpus.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ember {
namespace {

using nlohmann::json;
using testing::RunCommand;
using testing::ShellQuote;

// Strings with combining marks in every position the two matchers treat differently, and a few without.
const char* const kMarkCorpus[] = {
    "cafe\u0301 ok",
    "re\u0301sume\u0301 and nai\u0308ve",
    "\u0301",
    "\u0301leading mark",
    "\u0301\u0302x y",
    "Z\u0351\u0357\u0310a\u0324l\u0334g\u0337o text",
    "नमस्ते दुनिया",
    "हिन्दी भाषा में लिखा गया वाक्य।",
    "क्षत्रिय",
    "தமிழ் மொழி",
    "বাংলা ভাষা",
    "สวัสดีครับ ยินดีต้อนรับ",
    "ขอบคุณมากครับ",
    "ผู้หญิง",
    "ไม่ได้ ก็ได้ น้ำ",
    "ที่นี่ เมื่อ",
    "ภาษาไทย ๑๒๓",
    "كَتَبَ الوَلَدُ الدَّرْسَ",
    "بِسْمِ اللَّهِ",
    "مُحَمَّدٌ رَسُولُ",
    "الْحَمْدُ لِلَّهِ",
    "בְּרֵאשִׁית בָּרָא",
    "שָׁלוֹם עוֹלָם",
    "תּוֹרָה",
    "Tiếng Việt có dấu",
    "Tie\u0302\u0301ng Vie\u0323\u0302t",
    "ελληνικά: ά ά",
    "..\u0301 ok",
    "!\u0301a",
    "(\u0301)",
    "a \u0301b",
    "a  \u0301b",
    "a\n\u0301b",
    "a\r\n\u0301\u0302",
    "x\t\u0301",
    "12\u0301 3\u0301a",
    "#\u20E3 1\u20E3 keycaps",
    "it's  e\u0301te\u0301",
    "don'\u0301t",
    "o\u0338 \u2260 =\u0338",
    "Ωm\u0301 μ\u0301",
    "x 2024! Hello\n\n  world's",
};

struct Vocab {
  std::string family;  // gen-model --tokenizer
  std::string gguf;
  std::vector<std::vector<int32_t>> peer_ids;  // per corpus string
  std::unique_ptr<Tokenizer> tok;
};

TEST(Qwen35TokenizerParityTest, MatchesLlamaCppAndDiffersFromQwen2) {
  testing::TempDir dir;
  std::vector<std::string> corpus(std::begin(kMarkCorpus), std::end(kMarkCorpus));
  const size_t n_hand = corpus.size();
  // JavaScript strings cannot carry invalid UTF-8: sanitize as Node would (raw bytes are unit-tested).
  for (const std::string& s : GenerateTokenizerCorpus(/*seed=*/1, /*include_invalid_utf8=*/true)) {
    corpus.push_back(unicode::SanitizeUtf8(s));
  }
  std::ofstream(dir.file("in.json")) << json(corpus).dump();

  Vocab vocabs[] = {{"qwen35", dir.file("qwen35.gguf"), {}, nullptr}, {"qwen3", dir.file("qwen3.gguf"), {}, nullptr}};
  // gen-model, then the peer, for both vocabularies at once (each step costs about a second).
  std::string cmd = "set -e; ";
  for (const Vocab& v : vocabs) {
    cmd += ShellQuote(testing::EmberBinary()) + " gen-model --vocab-only --arch qwen3 --tokenizer " + v.family +
           " --out " + ShellQuote(v.gguf) + " >&2 & p_" + v.family + "=$!; ";
  }
  cmd += "wait $p_qwen35; wait $p_qwen3; ";
  for (const Vocab& v : vocabs) {
    cmd += testing::PeerRunner() + " tokenize-batch " + ShellQuote(v.gguf) + " --in " + ShellQuote(dir.file("in.json")) +
           " --out " + ShellQuote(v.gguf + ".peer.json") + " >&2 & p_" + v.family + "=$!; ";
  }
  cmd += "wait $p_qwen35; wait $p_qwen3";
  const auto r = RunCommand("bash -c " + ShellQuote(cmd));
  ASSERT_EQ(r.exit_code, 0) << "gen-model or the llama.cpp peer failed (see stderr): " << cmd;

  for (Vocab& v : vocabs) {
    const json peer = json::parse(testing::ReadFileToString(v.gguf + ".peer.json"), nullptr, false);
    ASSERT_TRUE(peer.is_array() && peer.size() == corpus.size()) << v.family << ": peer wrote no result";
    v.peer_ids = peer.get<std::vector<std::vector<int32_t>>>();
    auto tok = LoadTokenizerFromGguf(v.gguf);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    v.tok = std::move(tok).value();
    ASSERT_EQ(v.tok->spec().pre, v.family == "qwen35" ? "qwen35" : "qwen2");
    int mismatches = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      const std::vector<int32_t> mine = v.tok->Encode(corpus[i], /*add_special=*/false, /*parse_special=*/false);
      if (mine == v.peer_ids[i]) continue;
      if (++mismatches <= 5) {
        ADD_FAILURE() << v.family << ": " << json(corpus[i]).dump() << "\n  ember     " << json(mine).dump()
                      << "\n  llama.cpp " << json(v.peer_ids[i]).dump();
      }
    }
    EXPECT_EQ(mismatches, 0) << v.family << ": of " << corpus.size() << " strings";
  }

  // The split rule is what differs: on the hand-written strings, llama.cpp's own ids must differ for a
  // good share (the same BPE often re-creates the same tokens from a different split, so not for all).
  int differ = 0;
  for (size_t i = 0; i < n_hand; ++i) differ += vocabs[0].peer_ids[i] != vocabs[1].peer_ids[i];
  EXPECT_GE(differ, 8) << "of " << n_hand << " hand-written strings";
  // E.g. Thai: under qwen2 the vowel and tone marks split "ผู้หญิง" into 4 words; it is one token here.
  const size_t thai = std::find(corpus.begin(), corpus.end(), "ผู้หญิง") - corpus.begin();
  ASSERT_LT(thai, n_hand);
  EXPECT_NE(vocabs[0].peer_ids[thai], vocabs[1].peer_ids[thai]);
}

}  // namespace
}  // namespace ember
