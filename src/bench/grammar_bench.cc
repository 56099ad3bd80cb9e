#include "bench/grammar_bench.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"
#include "util/stopwatch.h"

namespace ember::bench {
namespace {

using nlohmann::json;

// A document shaped like structured output: nested objects, long strings, numbers, arrays.
std::string BenchDocument() {
  std::string doc = "{\"items\": [";
  for (int i = 0; i < 24; ++i) {
    if (i) doc += ", ";
    doc += "{\"id\": " + std::to_string(1000 + i * 37) + ", \"name\": \"item number " + std::to_string(i) +
           " with a longer description of what it is\", \"price\": " + std::to_string(i) + "." +
           std::to_string(i * 7 % 100) + ", \"tags\": [\"red\", \"small\", \"caf\xC3\xA9\"], \"ok\": " +
           (i % 2 ? "true" : "false") + "}";
  }
  doc += "], \"total\": 24}";
  return doc;
}

StatusOr<json> MeasureVocab(const std::string& path, const std::shared_ptr<const grammar::Grammar>& g) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, LoadTokenizerFromGguf(path));
  Stopwatch build;
  auto vocab = MakeGrammarVocabulary(*tok);
  const double build_ms = build.ElapsedMillis();
  const std::vector<int32_t> ids = tok->Encode(BenchDocument(), false, false);
  std::vector<float> logits(static_cast<size_t>(tok->n_vocab()), 0.0f);
  std::vector<double> all_us, miss_us, hit_us;
  grammar::GrammarMatcher m(g, vocab);
  for (int32_t id : ids) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const int64_t misses = m.stats().mask_misses;
    Stopwatch sw;
    m.Mask(logits);
    Status st = m.Accept(id);
    const double us = static_cast<double>(sw.ElapsedMicros());
    if (!st.ok()) return st.WithContext(path + ": the bench document does not match the grammar");
    all_us.push_back(us);
    (m.stats().mask_misses > misses ? miss_us : hit_us).push_back(us);
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
  };
  std::vector<double> sorted = all_us;
  std::sort(sorted.begin(), sorted.end());
  const double p99 = sorted.empty() ? 0 : sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
  return json{{"vocab", path},
              {"n_vocab", tok->n_vocab()},
              {"trie_nodes", vocab->trie_size()},
              {"index_ms", build_ms},
              {"tokens", ids.size()},
              {"mask_accept_us_mean", mean(all_us)},
              {"mask_accept_us_p99", p99},
              {"cached_us_mean", mean(hit_us)},
              {"misses", miss_us.size()},
              {"miss_us_mean", mean(miss_us)},
              {"dfa_resets", m.stats().resets}};
}

StatusOr<json> MeasureDecode(const GrammarBenchConfig& c, std::shared_ptr<const grammar::Grammar> g) {
  if (c.grammar_file.empty()) {
    // A stream of objects, with end-of-generation banned in both runs: the constrained run then lasts
    // the whole token budget like the free one, instead of stopping at the first complete object.
    const std::string stream = BenchJsonGrammar() + "\nbench-stream ::= root+\n";
    EMBER_ASSIGN_OR_RETURN(g, grammar::ParseGbnf(stream, "bench-stream"));
  }
  EngineOptions eo;
  eo.threads = c.threads;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Load(c.model, eo));
  auto vocab = MakeGrammarVocabulary(*engine->tokenizer());
  const std::vector<int32_t> prompt = engine->tokenizer()->Encode("Describe the items as JSON:", true, false);
  auto run = [&](bool constrained) -> StatusOr<json> {
    double best = 0;
    int64_t tokens = 0, misses = 0, masks = 0;
    for (int i = 0; i < std::max(c.runs, 1); ++i) {
      EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Sequence> seq, engine->NewSequence());
      grammar::GrammarMatcher m(g, vocab);
      GenerateOptions go;
      go.max_tokens = c.decode_tokens;
      go.stop_at_eog = false;
      go.sampling.temperature = 0.8f;
      go.sampling.seed = 7;
      for (int32_t id : engine->tokenizer()->eog_ids()) go.sampling.logit_bias[id] = -INFINITY;
      if (constrained) go.constraint = &m;
      EMBER_ASSIGN_OR_RETURN(GenerateResult r, engine->Generate(*seq, prompt, go, nullptr));
      const double tps = r.decode_s > 0 ? static_cast<double>(r.decode_tokens) / r.decode_s : 0;
      if (tps > best) best = tps, tokens = r.decode_tokens, misses = m.stats().mask_misses, masks = m.stats().masks;
      AdvanceBar(c.progress, std::string(constrained ? "constrained" : "free") + " decode run " + std::to_string(i + 1));
    }
    json out = {{"decode_tok_s", best}, {"decode_tokens", tokens}};
    if (constrained) out["masks"] = masks, out["mask_misses"] = misses;
    return out;
  };
  EMBER_ASSIGN_OR_RETURN(json free, run(false));
  EMBER_ASSIGN_OR_RETURN(json constrained, run(true));
  const double f = free["decode_tok_s"].get<double>(), k = constrained["decode_tok_s"].get<double>();
  return json{{"model", c.model}, {"free", free}, {"constrained", constrained},
              {"slowdown_pct", f > 0 ? (1 - k / f) * 100 : 0}};
}

}  // namespace

// The json_object grammar of response_format (any JSON object, bounded whitespace and nesting).
std::string BenchJsonGrammar() { return grammar::AnyJsonObjectGbnf(); }

StatusOr<json> RunGrammarBench(const GrammarBenchConfig& c) {
  std::string text = BenchJsonGrammar();
  if (!c.grammar_file.empty()) {
    std::ifstream in(c.grammar_file, std::ios::binary);
    if (!in) return NotFound("bench-grammar: cannot read " + c.grammar_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> g, grammar::ParseGbnf(text));
  json out = {{"vocabs", json::array()}};
  if (c.progress != nullptr)
    c.progress->SetTotal(c.vocabs.size() + (c.model.empty() ? 0 : 2 * static_cast<uint64_t>(std::max(c.runs, 1))));
  for (const std::string& v : c.vocabs) {
    LabelBar(c.progress, v);
    EMBER_ASSIGN_OR_RETURN(json row, MeasureVocab(v, g));
    out["vocabs"].push_back(std::move(row));
    AdvanceBar(c.progress, v);
  }
  if (!c.model.empty()) {
    LabelBar(c.progress, "decode runs");
    EMBER_ASSIGN_OR_RETURN(json d, MeasureDecode(c, g));
    out["decode"] = std::move(d);
  }
  return out;
}

}  // namespace ember::bench
