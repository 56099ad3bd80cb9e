// The mask work budget (grammar/mask_budget.h) on real vocabularies and through the batch runner: the
// up-front probe refuses the issue's costly grammar on Llama 3 and Qwen 3 and passes ordinary ones; a
// costly grammar, whether costly from its first token or only mid-reply, ends its own job with the
// budget error while its neighbour's tokens and logprobs stay bitwise those of its solo run, and it sat
// steps out instead of holding them (BatchRunnerStats::mask_waits).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "engine/batch_runner.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "engine_test_util.h"
#include "grammar_engine_fixture.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/mask_budget.h"
#include "tokenizer/tokenizer.h"

namespace ember {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const grammar::Grammar> Parse(std::string_view text) {
  auto g = grammar::ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

// The issue's 197-byte grammar, optionally after a fixed text (costly only once the text is written).
std::string CostlyGbnf(const std::string& prefix = "") {
  std::string g = "root ::= ";
  if (!prefix.empty()) g += "\"" + prefix + "\" ";
  g += "(";
  for (int i = 0; i < 60; ++i) g += " .?";
  return g + " ){0,60}";
}

std::shared_ptr<const grammar::Vocabulary> VocabOf(const std::string& family) {
  const std::string dir = testutil::MakeTempDir("mask-budget-vocab");
  const std::string path = testutil::GenModel(dir, family, "--vocab-only --tokenizer " + family);
  auto t = LoadTokenizerFromGguf(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? MakeGrammarVocabulary(**t) : nullptr;
}

void CheckProbe(const std::string& family) {
  auto vocab = VocabOf(family);
  ASSERT_NE(vocab, nullptr);
  Status costly = grammar::ProbeFirstMask(Parse(CostlyGbnf()), vocab);
  ASSERT_FALSE(costly.ok()) << family;
  EXPECT_EQ(costly.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(costly.message(), HasSubstr("grammar too costly"));
  auto schema = grammar::JsonSchemaTextToGbnf(
      R"({"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},)"
      R"("n":{"type":"integer"}},"required":["name","n"]})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  for (const std::string& ordinary :
       {grammar::AnyJsonObjectGbnf(), *schema, std::string("root ::= [^\\n]*"), std::string("root ::= .*"),
        std::string("root ::= \"yes\" | \"no\""), CostlyGbnf("Answer: ")}) {
    Status st = grammar::ProbeFirstMask(Parse(ordinary), vocab);
    EXPECT_TRUE(st.ok()) << family << ": " << ordinary.substr(0, 80) << ": " << st.ToString();
  }
}

TEST(MaskBudgetEngine, TheProbeJudgesTheFirstMaskLlama3) { CheckProbe("llama3"); }
TEST(MaskBudgetEngine, TheProbeJudgesTheFirstMaskQwen3) { CheckProbe("qwen3"); }

using Fixture = testutil::GrammarEngine;
Fixture& Shared() { return testutil::SharedGrammarEngine(); }

GenerateOptions NeighbourOptions() {
  GenerateOptions o;
  o.max_tokens = 16;
  o.sampling.temperature = 0.9f;
  o.sampling.seed = 21;
  o.top_logprobs = 3;
  o.stop_at_eog = false;
  return o;
}

// The neighbour (free, or under an ordinary grammar) beside a job under `costly_gbnf` with a small
// budget (the rule is the same at the default credit; a small one keeps the test quick).
void CheckNeighbourUnharmed(const std::string& costly_gbnf, const std::string& neighbour_gbnf) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  const std::vector<int32_t> prompt = f.engine->tokenizer()->Encode("Answer the question:", true, false);
  auto neighbour_grammar = neighbour_gbnf.empty() ? nullptr : Parse(neighbour_gbnf);
  auto solo_seq = std::move(f.engine->NewSequence()).value();
  GenerateOptions solo_opts = NeighbourOptions();
  std::unique_ptr<grammar::GrammarMatcher> solo_m;
  if (neighbour_grammar) solo_m = std::make_unique<grammar::GrammarMatcher>(neighbour_grammar, f.vocab);
  solo_opts.constraint = solo_m.get();
  auto solo = f.engine->Generate(*solo_seq, prompt, solo_opts, nullptr);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();

  BatchRunnerOptions bo;
  bo.max_seqs = 2;
  BatchRunner runner(*f.engine, bo);
  grammar::GrammarMatcher costly(Parse(costly_gbnf), f.vocab,
                                 grammar::MaskBudget(uint64_t{1} << 21, uint64_t{1} << 12));
  std::unique_ptr<grammar::GrammarMatcher> neighbour_m;
  if (neighbour_grammar) neighbour_m = std::make_unique<grammar::GrammarMatcher>(neighbour_grammar, f.vocab);
  auto seq_a = std::move(f.engine->NewSequence()).value();
  auto seq_b = std::move(f.engine->NewSequence()).value();
  StatusOr<BatchJobResult> bad = Status(StatusCode::kInternal, "not run"), good = bad;
  std::thread t1([&] {
    BatchJob job;
    job.seq = seq_a.get();
    job.prompt = prompt;
    job.options.max_tokens = 64;
    job.options.sampling.temperature = 0;
    job.options.constraint = &costly;
    bad = runner.Run(std::move(job));
  });
  std::thread t2([&] {
    BatchJob job;
    job.seq = seq_b.get();
    job.prompt = prompt;
    job.options = NeighbourOptions();
    job.options.constraint = neighbour_m.get();
    good = runner.Run(std::move(job));
  });
  t1.join();
  t2.join();
  ASSERT_FALSE(bad.ok()) << "the costly job ended without the budget error";
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("grammar too costly: mask work budget exhausted"));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->gen.tokens, solo->tokens);
  ASSERT_EQ(good->gen.logprobs.size(), solo->logprobs.size());
  for (size_t k = 0; k < solo->logprobs.size(); ++k) {
    EXPECT_EQ(good->gen.logprobs[k].logprob, solo->logprobs[k].logprob) << k;
  }
  EXPECT_GT(runner.stats().mask_waits, 0u) << "the costly job never sat a step out";
  EXPECT_GT(costly.stats().paused, 0);
}

TEST(MaskBudgetEngine, CostlyFromTheStartFailsAloneAndTheNeighbourMatchesItsSoloRun) {
  CheckNeighbourUnharmed(CostlyGbnf(), "");
}

TEST(MaskBudgetEngine, CostlyMidReplyFailsAloneAndAConstrainedNeighbourMatchesItsSoloRun) {
  CheckNeighbourUnharmed(CostlyGbnf("Answer: "), "root ::= \"{\" [a-z ]{0,40} \"}\"");
}

// A job whose grammar is ordinary runs to its end under the default budget, also in a batch, with the
// tokens of its solo run.
TEST(MaskBudgetEngine, AnOrdinaryGrammarNeverTrips) {
  Fixture& f = Shared();
  ASSERT_NE(f.engine, nullptr);
  auto g = Parse(grammar::AnyJsonObjectGbnf());
  const std::vector<int32_t> prompt = f.engine->tokenizer()->Encode("Answer the question:", true, false);
  GenerateOptions o;
  o.max_tokens = 48;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 3;
  grammar::GrammarMatcher solo_m(g, f.vocab);
  o.constraint = &solo_m;
  auto seq = std::move(f.engine->NewSequence()).value();
  auto solo = f.engine->Generate(*seq, prompt, o, nullptr);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  EXPECT_EQ(solo->tokens.size(), 48u);
  EXPECT_LT(solo_m.budget().spent(), grammar::kMaskRequestCredit / 8);

  BatchRunnerOptions bo;
  bo.max_seqs = 2;
  BatchRunner runner(*f.engine, bo);
  grammar::GrammarMatcher m(g, f.vocab);
  o.constraint = &m;
  auto seq2 = std::move(f.engine->NewSequence()).value();
  BatchJob job;
  job.seq = seq2.get();
  job.prompt = prompt;
  job.options = o;
  auto r = runner.Run(std::move(job));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gen.tokens, solo->tokens);
  EXPECT_EQ(m.budget().spent(), solo_m.budget().spent());
}

}  // namespace
}  // namespace ember
