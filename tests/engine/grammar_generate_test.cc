// Grammar-constrained generation on a small generated model with a real (Llama 3) vocabulary: what
// Generate writes is a sentence of the grammar, end-of-generation comes only when the grammar is
// complete, a constraint that refuses a token ends the generation with its error, and a constrained job
// run through the BatchRunner gives exactly the tokens of the serial run (same seed).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>

#include "engine/batch_runner.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "engine_test_util.h"
#include "grammar_engine_fixture.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"

namespace ember {
namespace {

using Fixture = testutil::GrammarEngine;
Fixture& Shared() { return testutil::SharedGrammarEngine(); }

std::shared_ptr<const grammar::Grammar> Parse(std::string_view text) {
  auto g = grammar::ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::string Text(const Engine& e, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!e.tokenizer()->IsEog(id)) s += e.tokenizer()->TokenToPiece(id, false);
  }
  return s;
}

std::vector<int32_t> Prompt(const Engine& e) { return e.tokenizer()->Encode("Answer the question:", true, false); }

constexpr const char* kJsonish = R"(
root   ::= "{" ws "\"name\":" ws string "," ws "\"tags\":" ws "[" ws (string ("," ws string)*)? "]" ws "}"
string ::= "\"" [a-z ]{0,12} "\""
ws     ::= " "?
)";

GenerateResult RunSolo(Engine& e, const std::shared_ptr<const grammar::Grammar>& g,
                       const std::shared_ptr<const grammar::Vocabulary>& v, GenerateOptions go) {
  grammar::GrammarMatcher m(g, v);
  go.constraint = &m;
  auto seq = std::move(e.NewSequence()).value();
  auto r = e.Generate(*seq, Prompt(e), go, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : GenerateResult{};
}

TEST(GrammarGenerate, GreedyOutputIsASentence) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  for (const char* gbnf : {"root ::= \"yes\" | \"no\"", "root ::= [0-9]{1,6}", kJsonish}) {
    auto g = Parse(gbnf);
    GenerateOptions go;
    go.max_tokens = 200;
    go.sampling.temperature = 0;
    const GenerateResult r = RunSolo(*f.engine, g, f.vocab, go);
    const std::string text = Text(*f.engine, r.tokens);
    EXPECT_EQ(r.stop, StopReason::kEog) << gbnf << " -> " << text;
    EXPECT_TRUE(grammar::Matches(*g, text)) << gbnf << " -> '" << text << "'";
  }
}

TEST(GrammarGenerate, SampledOutputIsASentence) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  auto g = Parse(kJsonish);
  for (uint64_t seed : {1, 2, 3}) {
    GenerateOptions go;
    go.max_tokens = 200;
    go.sampling.temperature = 1.5f;
    go.sampling.top_k = 0;
    go.sampling.top_p = 1;
    go.sampling.min_p = 0;
    go.sampling.seed = seed;
    go.top_logprobs = 2;
    const GenerateResult r = RunSolo(*f.engine, g, f.vocab, go);
    const std::string text = Text(*f.engine, r.tokens);
    EXPECT_EQ(r.stop, StopReason::kEog) << text;
    EXPECT_TRUE(grammar::Matches(*g, text)) << "'" << text << "'";
    // Logprobs are over the allowed tokens: every alternative with a finite logprob continues the text
    // written so far within the grammar (or ends it when it is complete).
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    std::string so_far;
    for (size_t k = 0; k < r.tokens.size(); ++k) {
      for (const TokenLogprob& alt : r.logprobs[k].top) {
        if (std::isinf(alt.logprob)) continue;
        if (f.engine->tokenizer()->IsEog(alt.token)) {
          EXPECT_TRUE(grammar::Matches(*g, so_far));
        } else {
          EXPECT_TRUE(grammar::IsPrefix(*g, so_far + std::string(f.engine->tokenizer()->TokenToPiece(alt.token, false))))
              << "alternative " << alt.token << " after '" << so_far << "'";
        }
      }
      so_far += Text(*f.engine, {r.tokens[k]});
    }
  }
}

TEST(GrammarGenerate, EndOfGenerationWaitsForCompletion) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  // Three digits at least: whatever the model prefers, it cannot stop before them.
  auto g = Parse("root ::= [0-9]{3,}");
  GenerateOptions go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  const GenerateResult r = RunSolo(*f.engine, g, f.vocab, go);
  const std::string text = Text(*f.engine, r.tokens);
  EXPECT_GE(text.size(), 3u);
  EXPECT_TRUE(grammar::IsPrefix(*g, text));
  if (r.stop == StopReason::kEog) {
    EXPECT_TRUE(grammar::Matches(*g, text));
  }
}

// Refuses every token: the engine must end the generation with the constraint's error.
class RefuseAll final : public grammar::TokenConstraint {
 public:
  void Mask(std::span<float> logits) override {
    for (float& l : logits) l = -INFINITY;
  }
  Status Accept(int32_t) override { return InvalidArgument("no token of the vocabulary can continue the grammar"); }
  bool Complete() const override { return false; }
  std::unique_ptr<TokenConstraint> Clone() const override { return std::make_unique<RefuseAll>(); }
};

TEST(GrammarGenerate, RefusedTokenEndsWithTheError) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  for (float temp : {0.0f, 0.8f}) {
    RefuseAll refuse;
    GenerateOptions go;
    go.max_tokens = 4;
    go.sampling.temperature = temp;
    go.constraint = &refuse;
    auto seq = std::move(f.engine->NewSequence()).value();
    auto r = f.engine->Generate(*seq, Prompt(*f.engine), go, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("no token of the vocabulary can continue the grammar"), std::string::npos);
  }
}

TEST(GrammarGenerate, BatchedEqualsSerial) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  auto g = Parse(kJsonish);
  auto digits = Parse("root ::= [0-9]{1,40}");
  const int kJobs = 4;
  std::vector<GenerateOptions> opts(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    opts[i].max_tokens = 60;
    opts[i].sampling.temperature = i % 2 == 0 ? 0.0f : 1.2f;
    opts[i].sampling.seed = 40 + static_cast<uint64_t>(i);
    opts[i].top_logprobs = i == 1 ? 3 : -1;
  }
  auto grammar_of = [&](int i) { return i == 3 ? digits : g; };
  std::vector<GenerateResult> solo;
  for (int i = 0; i < kJobs; ++i) solo.push_back(RunSolo(*f.engine, grammar_of(i), f.vocab, opts[i]));

  BatchRunnerOptions bo;
  bo.max_seqs = kJobs;
  BatchRunner runner(*f.engine, bo);
  const std::vector<int32_t> prompt = Prompt(*f.engine);
  std::vector<StatusOr<BatchJobResult>> got(kJobs, Status(StatusCode::kInternal, "not run"));
  std::vector<std::unique_ptr<grammar::GrammarMatcher>> matchers;
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < kJobs; ++i) {
    matchers.push_back(std::make_unique<grammar::GrammarMatcher>(grammar_of(i), f.vocab));
    seqs.push_back(std::move(f.engine->NewSequence()).value());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kJobs; ++i) {
    threads.emplace_back([&, i] {
      BatchJob job;
      job.seq = seqs[i].get();
      job.prompt = prompt;
      job.options = opts[i];
      job.options.constraint = matchers[i].get();
      got[i] = runner.Run(std::move(job));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(got[i]->gen.tokens, solo[i].tokens) << "job " << i;
    EXPECT_EQ(got[i]->gen.stop, solo[i].stop) << "job " << i;
    ASSERT_EQ(got[i]->gen.logprobs.size(), solo[i].logprobs.size());
    for (size_t k = 0; k < solo[i].logprobs.size(); ++k) {
      EXPECT_EQ(got[i]->gen.logprobs[k].logprob, solo[i].logprobs[k].logprob);
    }
    EXPECT_TRUE(grammar::IsPrefix(*grammar_of(i), Text(*f.engine, solo[i].tokens)));
  }
}

TEST(GrammarGenerate, BatchedRefusalFailsOnlyThatJob) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  BatchRunnerOptions bo;
  bo.max_seqs = 2;
  BatchRunner runner(*f.engine, bo);
  const std::vector<int32_t> prompt = Prompt(*f.engine);
  RefuseAll refuse;
  auto g = Parse("root ::= [a-z]{1,10}");
  grammar::GrammarMatcher m(g, f.vocab);
  auto s1 = std::move(f.engine->NewSequence()).value();
  auto s2 = std::move(f.engine->NewSequence()).value();
  StatusOr<BatchJobResult> bad = Status(StatusCode::kInternal, "not run"), good = bad;
  std::thread t1([&] {
    BatchJob job;
    job.seq = s1.get();
    job.prompt = prompt;
    job.options.max_tokens = 20;
    job.options.constraint = &refuse;
    bad = runner.Run(std::move(job));
  });
  std::thread t2([&] {
    BatchJob job;
    job.seq = s2.get();
    job.prompt = prompt;
    job.options.max_tokens = 20;
    job.options.sampling.temperature = 0;
    job.options.constraint = &m;
    good = runner.Run(std::move(job));
  });
  t1.join();
  t2.join();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no token of the vocabulary"), std::string::npos);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_TRUE(grammar::Matches(*g, Text(*f.engine, good->gen.tokens)));
}

}  // namespace
}  // namespace ember
