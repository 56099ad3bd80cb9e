// Exact parity with llama.cpp (the peer in peers/llamacpp, node-llama-cpp 3.21.1) on a generated corpus of
// ~2,500 strings, for the Llama 3, Qwen3 and Gemma 3 tokenizers, with and without special-token parsing,
// plus llama_detokenize parity and the decode(encode(s)) == s round trip.
//
// The vocab-only GGUFs come from `ember gen-model --vocab-only`; the peer is run once per tokenizer and
// mode over the whole corpus (tokenize-batch / detokenize-batch). JavaScript strings cannot carry invalid
// UTF-8, so the corpus is sanitized the way Node decodes it (U+FFFD per maximal ill-formed subpart) and
// ember tokenizes exactly those bytes; raw invalid bytes are covered by the unit tests.
// This test fails (never skips) when node, the peer, or the ember binary is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/corpus.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ember {
namespace {

using nlohmann::json;

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its exit status and (in `out`) stdout + stderr.
int RunShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return pclose(p);
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

std::string Escaped(const std::string& s) { return json(s).dump(-1, ' ', true).substr(0, 160); }

// Per tokenizer family: the vocab-only GGUF, ember's tokenizer for it and the corpus, built once for all
// the tests of that family and removed at the end of the suite.
struct Family {
  std::string dir, gguf;
  std::unique_ptr<Tokenizer> tok;
  std::vector<std::string> corpus;
  json peer;  // runner.mjs parity-batch: {ids, ids_special, text}
};

class LlamaCppParityTest : public ::testing::TestWithParam<const char*> {
 protected:
  static std::map<std::string, std::unique_ptr<Family>>& Families() {
    static auto* families = new std::map<std::string, std::unique_ptr<Family>>();
    return *families;
  }
  static void TearDownTestSuite() {
    for (auto& [name, f] : Families()) {
      std::string log;
      (void)RunShell("rm -rf " + Quote(f->dir), &log);
    }
    Families().clear();
  }
  void SetUp() override {
    std::unique_ptr<Family>& f = Families()[GetParam()];
    if (f == nullptr) {
      f = std::make_unique<Family>();
      char tmpl[] = "/tmp/ember_tok_parity_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      f->dir = tmpl;
      f->gguf = f->dir + "/" + GetParam() + ".gguf";
      std::string log;
      const std::string gen = Quote(std::string(EMBER_BINARY_DIR) + "/ember") +
                              " gen-model --vocab-only --tokenizer " + GetParam() + " --out " + Quote(f->gguf);
      ASSERT_EQ(RunShell(gen, &log), 0) << gen << "\n" << log;
      auto tok = LoadTokenizerFromGguf(f->gguf);
      ASSERT_TRUE(tok.ok()) << tok.status().ToString();
      f->tok = std::move(tok).value();
      for (const std::string& s : GenerateTokenizerCorpus(/*seed=*/1, /*include_invalid_utf8=*/true)) {
        f->corpus.push_back(unicode::SanitizeUtf8(s));
      }
      std::ofstream(f->dir + "/in.json") << json(f->corpus).dump();
      f->peer = Peer(f->gguf, f->dir);
    }
    ASSERT_NE(f->tok, nullptr) << "setup failed earlier for " << GetParam();
    dir_ = f->dir;
    gguf_ = f->gguf;
    tok_ = f->tok.get();
    corpus_ = &f->corpus;
    peer_ = &f->peer;
  }

  // One peer run over the whole corpus: llama.cpp's ids without and with special parsing, and the
  // llama_detokenize text of the former.
  static json Peer(const std::string& gguf, const std::string& dir) {
    const std::string runner = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
    const std::string cmd = "node " + Quote(runner) + " parity-batch " + Quote(gguf) + " --in " +
                            Quote(dir + "/in.json") + " --out " + Quote(dir + "/peer.json");
    std::string log;
    const int rc = RunShell(cmd, &log);
    EXPECT_EQ(rc, 0) << cmd << "\n" << log;
    json j = ReadJson(dir + "/peer.json");
    EXPECT_TRUE(j.is_object()) << "peer wrote no result: " << cmd << "\n" << log;
    return j.is_object() ? j : json::object();
  }

  void ExpectEncodeParity(bool special) {
    const json& peer = (*peer_)[special ? "ids_special" : "ids"];
    ASSERT_EQ(peer.size(), corpus_->size());
    int mismatches = 0;
    for (size_t i = 0; i < corpus_->size(); ++i) {
      const std::vector<int32_t> mine = tok_->Encode((*corpus_)[i], /*add_special=*/false, special);
      const std::vector<int32_t> theirs = peer[i].get<std::vector<int32_t>>();
      if (mine == theirs) continue;
      if (++mismatches <= 5) {
        ADD_FAILURE() << GetParam() << (special ? " (special)" : "") << ": " << Escaped((*corpus_)[i]) << "\n  ember    "
                      << json(mine).dump() << "\n  llama.cpp " << json(theirs).dump();
      }
    }
    EXPECT_EQ(mismatches, 0) << "of " << corpus_->size() << " strings";
  }

  std::string dir_, gguf_;
  const Tokenizer* tok_ = nullptr;
  const std::vector<std::string>* corpus_ = nullptr;
  const json* peer_ = nullptr;
};

TEST_P(LlamaCppParityTest, EncodeMatchesWithoutSpecialParsing) { ExpectEncodeParity(false); }

TEST_P(LlamaCppParityTest, EncodeMatchesWithSpecialParsing) { ExpectEncodeParity(true); }

TEST_P(LlamaCppParityTest, DecodeRoundTrips) {
  int failures = 0;
  for (const std::string& s : *corpus_) {
    const std::string back = tok_->Decode(tok_->Encode(s, false, false), false);
    if (back != s && ++failures <= 5) {
      ADD_FAILURE() << GetParam() << ": decode(encode(s)) != s for " << Escaped(s) << ": " << Escaped(back);
    }
  }
  EXPECT_EQ(failures, 0) << "of " << corpus_->size() << " strings";
}

TEST_P(LlamaCppParityTest, DetokenizeMatches) {
  const json& ids = (*peer_)["ids"];
  const json& text = (*peer_)["text"];
  ASSERT_EQ(ids.size(), corpus_->size());
  ASSERT_EQ(text.size(), corpus_->size());
  int mismatches = 0;
  for (size_t i = 0; i < corpus_->size(); ++i) {
    // Node turns the bytes into a JS string, replacing ill-formed UTF-8 (a split character) with U+FFFD.
    const std::string mine = unicode::SanitizeUtf8(tok_->Detokenize(ids[i].get<std::vector<int32_t>>(), false));
    const std::string theirs = text[i].get<std::string>();
    if (mine != theirs && ++mismatches <= 5) {
      ADD_FAILURE() << GetParam() << ": detokenize " << Escaped((*corpus_)[i]) << "\n  ember    " << Escaped(mine)
                    << "\n  llama.cpp " << Escaped(theirs);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << corpus_->size() << " strings";
}

INSTANTIATE_TEST_SUITE_P(Families, LlamaCppParityTest, ::testing::Values("llama3", "qwen3", "gemma3"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace ember
