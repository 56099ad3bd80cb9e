// ember bench-grammar: what grammar-constrained sampling costs (docs/grammar.md "Costs").
//   * Per vocabulary (a GGUF; vocab-only is enough): the time to index it (grammar::Vocabulary), and the
//     per-token Mask + Accept cost of a JSON grammar while the tokens of a generated JSON document are
//     fed through a fresh matcher: mean, p99, and the cold masks (cache misses: a trie walk) apart.
//   * With a model: decode tokens/s of Engine::Generate without and with the constraint (same sampling,
//     same seed, end-of-generation banned in both; the built-in grammar as a stream of objects,
//     `root ::= object+`, so the constrained run lasts the whole budget too), and the slowdown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/progress.h"
#include "util/status.h"

namespace ember::bench {

struct GrammarBenchConfig {
  std::vector<std::string> vocabs;  // GGUF files whose tokenizer is measured
  std::string model;                // "": no decode comparison
  std::string grammar_file;         // "": the built-in JSON grammar
  int64_t decode_tokens = 128;      // per decode run
  int runs = 3;                     // decode runs per side (best is reported)
  int threads = 0;                  // engine threads; 0: physical cores
  ProgressBar* progress = nullptr;  // optional: one unit per vocabulary and per decode run
};

// The built-in grammar: response_format json_object's (grammar::AnyJsonObjectGbnf).
std::string BenchJsonGrammar();

StatusOr<nlohmann::json> RunGrammarBench(const GrammarBenchConfig& config);

}  // namespace ember::bench
