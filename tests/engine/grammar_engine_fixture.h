// One small generated Llama 3-vocabulary model and its grammar vocabulary, loaded once per test binary
// and shared by the grammar-on-engine tests (generating and loading it per test would dominate them).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "engine_test_util.h"

namespace ember::testutil {

struct GrammarEngine {
  std::unique_ptr<Engine> engine;
  std::shared_ptr<const grammar::Vocabulary> vocab;
};

inline GrammarEngine& SharedGrammarEngine() {
  static GrammarEngine* f = [] {
    auto* fx = new GrammarEngine();
    const std::string dir = MakeTempDir("grammar-engine");
    const std::string model = GenModel(
        dir, "m", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 5");
    EngineOptions eo;
    eo.threads = 2;
    eo.ubatch = 64;
    auto e = Engine::Load(model, eo);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (e.ok()) {
      fx->engine = std::move(*e);
      fx->vocab = MakeGrammarVocabulary(*fx->engine->tokenizer());
    }
    return fx;
  }();
  return *f;
}

}  // namespace ember::testutil
