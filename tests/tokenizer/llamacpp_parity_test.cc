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
  std::string gguf;
  std::unique_ptr<Tokenizer> tok;
  std::vector<std::string> corpus;
  json peer;  // runner.mjs parity-batch: {ids, ids_special, text}
};

constexpr const char* kFamilies[] = {"llama3", "qwen3", "gemma3"};

// Starts `cmd` with its output going to `log_path`; Wait() returns its exit status. Lets the slow steps
// (gen-model, node start-up and vocabulary load) of the three families overlap.
class Background {
 public:
  Background(const std::string& cmd, const std::string& log_path)
      : cmd_(cmd), log_(log_path), p_(popen((cmd + " > " + Quote(log_path) + " 2>&1").c_str(), "r")) {}
  int Wait() { return p_ == nullptr ? -1 : pclose(p_); }
  std::string Describe() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return cmd_ + "\n" + ss.str().substr(0, 2000);
  }

 private:
  std::string cmd_, log_;
  FILE* p_;
};

class LlamaCppParity {
 public:
  static std::map<std::string, std::unique_ptr<Family>>& Families() {
    static auto* families = new std::map<std::string, std::unique_ptr<Family>>();
    return *families;
  }
  // Builds every family's GGUF, tokenizer, corpus and llama.cpp results, running the external steps of
  // the three families concurrently. Failures are recorded as test failures of the suite.
  static void SetUpAll() {
    char tmpl[] = "/tmp/ember_tok_parity_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::vector<std::string> corpus;
    for (const std::string& s : GenerateTokenizerCorpus(/*seed=*/1, /*include_invalid_utf8=*/true)) {
      corpus.push_back(unicode::SanitizeUtf8(s));
    }
    std::ofstream(dir_ + "/in.json") << json(corpus).dump();
    std::vector<std::unique_ptr<Background>> jobs;
    for (const char* name : kFamilies) {
      const std::string gguf = dir_ + "/" + name + ".gguf";
      jobs.push_back(std::make_unique<Background>(Quote(std::string(EMBER_BINARY_DIR) + "/ember") +
                                                      " gen-model --vocab-only --tokenizer " + name + " --out " +
                                                      Quote(gguf),
                                                  dir_ + "/" + name + ".gen.log"));
    }
    for (auto& j : jobs) ASSERT_EQ(j->Wait(), 0) << j->Describe();
    jobs.clear();
    const std::string runner = std::string(EMBER_SOURCE_DIR) + "/peers/llamacpp/runner.mjs";
    for (const char* name : kFamilies) {
      const std::string base = dir_ + "/" + name;
      jobs.push_back(std::make_unique<Background>("node " + Quote(runner) + " parity-batch " + Quote(base + ".gguf") +
                                                      " --in " + Quote(dir_ + "/in.json") + " --out " +
                                                      Quote(base + ".peer.json"),
                                                  base + ".peer.log"));
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      // Load ember's tokenizer while the peers run.
      auto f = std::make_unique<Family>();
      f->gguf = dir_ + "/" + kFamilies[i] + ".gguf";
      f->corpus = corpus;
      auto tok = LoadTokenizerFromGguf(f->gguf);
      EXPECT_TRUE(tok.ok()) << tok.status().ToString();
      if (tok.ok()) f->tok = std::move(tok).value();
      Families()[kFamilies[i]] = std::move(f);
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(jobs[i]->Wait(), 0) << jobs[i]->Describe();
      json j = ReadJson(dir_ + "/" + kFamilies[i] + ".peer.json");
      EXPECT_TRUE(j.is_object()) << "peer wrote no result: " << jobs[i]->Describe();
      Families()[kFamilies[i]]->peer = j.is_object() ? j : json::object();
    }
  }
  static void TearDownAll() {
    std::string log;
    if (!dir_.empty()) (void)RunShell("rm -rf " + Quote(dir_), &log);
    Families().clear();
  }
  // Selects the family the checks below look at.
  void Select(const std::string& name) {
    name_ = name;
    auto it = Families().find(name);
    ASSERT_TRUE(it != Families().end() && it->second->tok != nullptr && it->second->peer.contains("ids"))
        << "setup failed for " << name << " (see the failures above)";
    tok_ = it->second->tok.get();
    corpus_ = &it->second->corpus;
    peer_ = &it->second->peer;
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
        ADD_FAILURE() << name_ << (special ? " (special)" : "") << ": " << Escaped((*corpus_)[i])
                      << "\n  ember     " << json(mine).dump() << "\n  llama.cpp " << json(theirs).dump();
      }
    }
    EXPECT_EQ(mismatches, 0) << name_ << (special ? " (special)" : "") << ": of " << corpus_->size() << " strings";
  }

  void ExpectDecodeRoundTrips() {
    int failures = 0;
    for (const std::string& s : *corpus_) {
      const std::string back = tok_->Decode(tok_->Encode(s, false, false), false);
      if (back != s && ++failures <= 5) {
        ADD_FAILURE() << name_ << ": decode(encode(s)) != s for " << Escaped(s) << ": " << Escaped(back);
      }
    }
    EXPECT_EQ(failures, 0) << name_ << ": of " << corpus_->size() << " strings";
  }

  void ExpectDetokenizeParity() {
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
        ADD_FAILURE() << name_ << ": detokenize " << Escaped((*corpus_)[i]) << "\n  ember     " << Escaped(mine)
                      << "\n  llama.cpp " << Escaped(theirs);
      }
    }
    EXPECT_EQ(mismatches, 0) << name_ << ": of " << corpus_->size() << " strings";
  }

 private:
  static inline std::string dir_;
  std::string name_;
  const Tokenizer* tok_ = nullptr;
  const std::vector<std::string>* corpus_ = nullptr;
  const json* peer_ = nullptr;
};

// One test (one ctest entry, one shared setup): for each family, ids with and without special-token
// parsing, the decode round trip, and llama_detokenize.
TEST(LlamaCppParityTest, AllFamiliesMatchLlamaCpp) {
  LlamaCppParity::SetUpAll();
  for (const char* name : kFamilies) {
    LlamaCppParity p;
    p.Select(name);
    if (HasFatalFailure()) break;
    p.ExpectEncodeParity(false);
    p.ExpectEncodeParity(true);
    p.ExpectDecodeRoundTrips();
    p.ExpectDetokenizeParity();
  }
  LlamaCppParity::TearDownAll();
}

}  // namespace
}  // namespace ember
