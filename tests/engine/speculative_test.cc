// Speculative decoding (docs/speculative.md): prompt-lookup drafting, the pacer, the sampler's
// rejection rule (statistically, against the exact distribution), and that greedy generation with
// speculation is bitwise the plain one — tokens, logprobs of every position, stop reason and the
// sequence's final state — with both drafters, solo and in the BatchRunner.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "engine/batch_runner.h"
#include "engine/drafter.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "engine/ngram_draft.h"
#include "engine_test_util.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"

namespace ember {
namespace {

TEST(NgramDraftTest, ProposesTheContinuationOfTheLongestLatestMatch) {
  std::vector<int32_t> out;
  // No tail bigram recurs: nothing.
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{1, 2, 3, 4, 5}, 2, 4, 3, &out), 0);
  EXPECT_TRUE(out.empty());
  // Tail [2 3] occurs at 1..2, followed by 9 8 7.
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{1, 2, 3, 9, 8, 7, 2, 3}, 2, 4, 3, &out), 3);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 8, 7}));
  // Two matches of [5 6]: the longer one ([4 5 6], followed by 1) wins over the later ([5 6] -> 2).
  out.clear();
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{4, 5, 6, 1, 0, 5, 6, 2, 0, 4, 5, 6}, 2, 4, 1, &out), 1);
  EXPECT_EQ(out, (std::vector<int32_t>{1}));
  // Equal lengths: the latest wins.
  out.clear();
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{5, 6, 1, 5, 6, 2, 0, 5, 6}, 2, 2, 1, &out), 1);
  EXPECT_EQ(out, (std::vector<int32_t>{2}));
  // A loop of period 3 drafts the loop on past the end of the context.
  out.clear();
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{7, 1, 2, 3, 1, 2, 3}, 2, 4, 7, &out), 7);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2, 3, 1, 2, 3, 1}));
  // Appends after what *out holds.
  std::vector<int32_t> held = {42};
  EXPECT_EQ(NgramDraft(std::vector<int32_t>{1, 2, 3, 1, 2}, 2, 4, 2, &held), 2);
  EXPECT_EQ(held, (std::vector<int32_t>{42, 3, 1}));
}

TEST(DraftPacerTest, DraftsLongWhenDraftsHoldAndBacksOffWhenTheyFail) {
  DraftPacer p(8);
  const int first = p.Next();
  EXPECT_GE(first, 1);
  EXPECT_LT(first, 8);  // a modest start: nothing is known yet
  for (int i = 0; i < 6; ++i) p.Record(p.Next(), p.Next());  // every draft accepted
  EXPECT_EQ(p.Next(), 8);
  EXPECT_GT(p.acceptance(), 0.9);
  // Every draft rejected: drafting stops, then probes one token after 1, 2, 4, ... idle steps.
  for (int i = 0; i < 12; ++i) p.Record(std::max(1, p.Next()), 0);
  EXPECT_LT(p.acceptance(), 0.2);
  std::vector<int> seq;
  for (int i = 0; i < 40; ++i) {
    const int k = p.Next();
    seq.push_back(k);
    if (k > 0) p.Record(k, 0);
  }
  std::vector<int> probes;
  for (int i = 0; i < 40; ++i) {
    EXPECT_LE(seq[static_cast<size_t>(i)], 1);
    if (seq[static_cast<size_t>(i)] == 1) probes.push_back(i);
  }
  ASSERT_GE(probes.size(), 3u);
  for (size_t i = 2; i < probes.size(); ++i) {
    EXPECT_GT(probes[i] - probes[i - 1], probes[i - 1] - probes[i - 2]) << "the gaps between probes grow";
  }
  // Probes that hit bring drafting back.
  for (int i = 0; i < 30 && p.Next() < 4; ++i) p.Record(1, 1);
  EXPECT_GE(p.Next(), 4);
  p.Record(0, 0);  // nothing drafted: no information
  EXPECT_GE(p.Next(), 4);
}

TEST(SpeculativeOptionsTest, BadOptionsAreRefusedByName) {
  SpeculativeOptions o;
  o.mode = SpecMode::kNgram;
  EXPECT_TRUE(o.Validate().ok());
  o.draft_max = 0;
  EXPECT_NE(o.Validate().ToString().find("draft_max"), std::string::npos);
  o.draft_max = kMaxDraftTokens + 1;
  EXPECT_FALSE(o.Validate().ok());
  o.draft_max = 4;
  o.ngram_min = 3;
  o.ngram_max = 2;
  EXPECT_NE(o.Validate().ToString().find("ngram_min"), std::string::npos);
  o = {};
  o.mode = SpecMode::kDraft;
  EXPECT_NE(o.Validate().ToString().find("draft model"), std::string::npos);
  EXPECT_FALSE(ParseSpecMode("fast").ok());
  EXPECT_EQ(*ParseSpecMode("ngram"), SpecMode::kNgram);
}

// The emitted token's distribution is the target's whatever the draft: chi-square of 200k draws of
// SampleDraft against the exact softmax, for drafts of high, middling and ~zero probability, plus
// top-k truncation (a draft outside the top-k is never emitted). Fixed seeds: deterministic.
TEST(SamplerDraftTest, AcceptedDistributionIsTheTargets) {
  const std::vector<float> logits = {2.0f, 1.2f, 0.7f, 0.1f, -0.5f, -8.0f};
  const int n = static_cast<int>(logits.size());
  for (int top_k : {0, 4}) {
    SamplerParams sp;
    sp.temperature = 0.8f;
    sp.top_k = top_k;
    sp.top_p = 1;
    sp.min_p = 0;
    const int kept = top_k > 0 ? top_k : n;
    std::vector<double> p(static_cast<size_t>(n), 0);
    double z = 0;
    for (int i = 0; i < kept; ++i) z += std::exp(logits[static_cast<size_t>(i)] / sp.temperature);
    for (int i = 0; i < kept; ++i) p[static_cast<size_t>(i)] = std::exp(logits[static_cast<size_t>(i)] / sp.temperature) / z;
    for (int32_t draft : {0, 2, 5}) {
      sp.seed = 1000 + static_cast<uint64_t>(draft) + static_cast<uint64_t>(top_k);
      Sampler s(sp, n);
      const int kDraws = 200000;
      std::vector<int> count(static_cast<size_t>(n), 0);
      for (int d = 0; d < kDraws; ++d) ++count[static_cast<size_t>(s.SampleDraft(logits.data(), draft))];
      double chi2 = 0;
      int dof = -1;
      for (int i = 0; i < n; ++i) {
        const double e = p[static_cast<size_t>(i)] * kDraws;
        if (e < 1e-9) {
          EXPECT_EQ(count[static_cast<size_t>(i)], 0) << "token " << i << " is outside the top-k";
          continue;
        }
        chi2 += (count[static_cast<size_t>(i)] - e) * (count[static_cast<size_t>(i)] - e) / e;
        ++dof;
      }
      // 5 (or 3) degrees of freedom: P(chi2 > 25) < 2e-4. Emitting the draft always, or never
      // renormalising after a rejection, gives chi2 in the thousands.
      EXPECT_LT(chi2, 25.0) << "draft " << draft << " top_k " << top_k << " dof " << dof;
    }
  }
  // Greedy: the argmax whatever the draft.
  SamplerParams g;
  g.temperature = 0;
  Sampler s(g, n);
  EXPECT_EQ(s.SampleDraft(logits.data(), 3), 0);
  EXPECT_EQ(s.SampleDraft(logits.data(), 0), 0);
}

struct Models {
  std::unique_ptr<Engine> target, other;  // other: a different model with the same vocabulary
  std::string target_path;
};

std::unique_ptr<Engine> Load(const std::string& path, int64_t n_ctx = 0) {
  EngineOptions eo;
  eo.threads = 2;
  eo.ubatch = 64;
  eo.n_ctx = n_ctx;
  auto e = Engine::Load(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

Models MakeModels(const std::string& target_args) {
  Models m;
  const std::string dir = testutil::MakeTempDir("spec");
  m.target_path = testutil::GenModel(dir, "t", target_args);
  const std::string other = testutil::GenModel(
      dir, "d", "--arch llama --tokenizer llama3 --n-layer 1 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 77");
  m.target = Load(m.target_path);
  m.other = Load(other);
  if (m.target && m.other) {
    EXPECT_TRUE(CheckDraftModel(*m.target, *m.other).ok());
  }
  return m;
}

constexpr const char* kLlama =
    "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 9";

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int64_t nv) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
  return t;
}

struct RunOut {
  GenerateResult r;
  std::vector<int32_t> seq_tokens;
  std::vector<float> next_logits;  // the sequence's logits for one more token: its KV, bitwise
};

RunOut Generate(Engine& e, const std::vector<int32_t>& prompt, const GenerateOptions& go) {
  RunOut out;
  auto seq = std::move(e.NewSequence()).value();
  auto r = e.Generate(*seq, prompt, go, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return out;
  out.r = std::move(*r);
  out.seq_tokens = seq->tokens();
  auto l = e.Decode(*seq, 1);
  EXPECT_TRUE(l.ok());
  if (l.ok()) out.next_logits.assign(*l, *l + e.model().config().n_vocab);
  return out;
}

void ExpectSame(const GenerateResult& got, const GenerateResult& want, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_EQ(got.stop, want.stop) << what;
  EXPECT_EQ(got.decode_tokens, want.decode_tokens) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t k = 0; k < got.logprobs.size(); ++k) {
    EXPECT_EQ(got.logprobs[k].token, want.logprobs[k].token) << what;
    EXPECT_EQ(got.logprobs[k].logprob, want.logprobs[k].logprob) << what << " position " << k;  // bitwise
    ASSERT_EQ(got.logprobs[k].top.size(), want.logprobs[k].top.size());
    for (size_t m = 0; m < got.logprobs[k].top.size(); ++m) {
      EXPECT_EQ(got.logprobs[k].top[m].token, want.logprobs[k].top[m].token) << what;
      EXPECT_EQ(got.logprobs[k].top[m].logprob, want.logprobs[k].top[m].logprob) << what;
    }
  }
}

// Prompts: random; one with a repeated stretch; one that ends with the model's own greedy continuation
// of its first part (so prompt lookup drafts what the model will say: long accepted runs).
std::vector<std::vector<int32_t>> Prompts(Engine& e) {
  std::mt19937 rng(11);
  const int64_t nv = e.model().config().n_vocab;
  std::vector<std::vector<int32_t>> p;
  p.push_back(RandomTokens(rng, 23, nv));
  std::vector<int32_t> rep = RandomTokens(rng, 30, nv);
  rep.insert(rep.end(), rep.begin() + 5, rep.begin() + 25);
  p.push_back(rep);
  std::vector<int32_t> head = RandomTokens(rng, 12, nv);
  GenerateOptions go;
  go.max_tokens = 40;
  go.sampling.temperature = 0;
  go.stop_at_eog = false;
  auto seq = std::move(e.NewSequence()).value();
  auto cont = e.Generate(*seq, head, go, nullptr);
  EXPECT_TRUE(cont.ok());
  std::vector<int32_t> own = head;
  own.insert(own.end(), cont->tokens.begin(), cont->tokens.end());
  own.insert(own.end(), head.begin(), head.end());
  p.push_back(own);
  return p;
}

class GreedySpecTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GreedySpecTest, OutputIsBitwiseThePlainOne) {
  Models m = MakeModels(GetParam());
  ASSERT_TRUE(m.target && m.other);
  const std::vector<std::vector<int32_t>> prompts = Prompts(*m.target);
  int64_t accepted = 0, drafted = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (int max_tokens : {1, 7, 60}) {
      GenerateOptions plain;
      plain.max_tokens = max_tokens;
      plain.sampling.temperature = 0;
      plain.sampling.repeat_penalty = i == 1 ? 1.3f : 1.0f;  // penalties see the accepted drafts too
      plain.stop_at_eog = false;
      plain.top_logprobs = 5;
      const RunOut want = Generate(*m.target, prompts[i], plain);
      // ngram; the target itself as draft model (every draft right: long verified runs); another model.
      for (int d = 0; d < 3; ++d) {
        GenerateOptions go = plain;
        go.speculative.mode = d == 0 ? SpecMode::kNgram : SpecMode::kDraft;
        go.speculative.draft_engine = d == 1 ? m.target.get() : m.other.get();
        go.speculative.draft_max = d == 2 ? 3 : 8;
        const std::string what = "prompt " + std::to_string(i) + " max " + std::to_string(max_tokens) + " drafter " +
                                 std::to_string(d);
        const RunOut got = Generate(*m.target, prompts[i], go);
        ExpectSame(got.r, want.r, what);
        EXPECT_EQ(got.seq_tokens, want.seq_tokens) << what;
        ASSERT_EQ(got.next_logits.size(), want.next_logits.size());
        EXPECT_EQ(std::memcmp(got.next_logits.data(), want.next_logits.data(), got.next_logits.size() * 4), 0) << what;
        EXPECT_LE(got.r.draft_accepted, got.r.draft_tokens);
        // Each draft carries 1..draft_max tokens.
        EXPECT_LE(got.r.drafts, got.r.draft_tokens) << what;
        EXPECT_GE(got.r.drafts * go.speculative.draft_max, got.r.draft_tokens) << what;
        EXPECT_EQ(got.r.drafts > 0, got.r.draft_tokens > 0) << what;
        if (d == 1 && i != 1 && max_tokens > 1) {
          EXPECT_EQ(got.r.draft_accepted, got.r.draft_tokens) << what;
        }
        accepted += got.r.draft_accepted;
        drafted += got.r.draft_tokens;
        if (d == 0 && i == 2 && max_tokens == 60) {
          EXPECT_GT(got.r.draft_accepted, 20) << "the prompt holds the reply";
        }
      }
    }
  }
  EXPECT_GT(drafted, accepted);  // some drafts were rejected (and rolled back) too
  EXPECT_GT(accepted, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GreedySpecTest,
    ::testing::Values(kLlama,
                      // window layers: a verification is cut back inside the retained margin
                      "--arch gemma3 --tokenizer llama3 --n-layer 3 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 "
                      "--sliding-window 16 --swa-pattern 3 --type q8_0 --seed 7"));

// Stops behave as without speculation: a callback stop inside an accepted run discards the rest, and
// the sequence holds exactly the plain run's positions.
TEST(SpecGenerateTest, CallbackStopInsideAnAcceptedRun) {
  Models m = MakeModels(kLlama);
  ASSERT_TRUE(m.target);
  const std::vector<std::vector<int32_t>> prompts = Prompts(*m.target);
  for (int stop_after : {1, 2, 5, 9}) {
    GenerateOptions go;
    go.max_tokens = 40;
    go.sampling.temperature = 0;
    go.stop_at_eog = false;
    auto run = [&](bool spec) {
      if (spec) {
        go.speculative.mode = SpecMode::kDraft;
        go.speculative.draft_engine = m.target.get();
      }
      auto seq = std::move(m.target->NewSequence()).value();
      int seen = 0;
      auto r = m.target->Generate(*seq, prompts[2], go, [&](int32_t) { return ++seen < stop_after; });
      EXPECT_TRUE(r.ok());
      EXPECT_EQ(r->stop, StopReason::kCallback);
      EXPECT_EQ(static_cast<int>(r->tokens.size()), stop_after);
      return std::make_pair(r->tokens, seq->tokens());
    };
    const auto want = run(false);
    const auto got = run(true);
    EXPECT_EQ(got, want) << "stop after " << stop_after;
  }
}

// With sampling the tokens after accepted drafts are distributed as without speculation: the marginals
// of the 2nd and 3rd generated tokens over 500 seeds, plain vs speculative (the target as its own
// draft, top-k 4 so that acceptances are frequent), two-sample chi-square. The prompt is prefilled once;
// each run continues a view of it.
TEST(SpecGenerateTest, SampledTokensHaveThePlainDistribution) {
  Models m = MakeModels(kLlama);
  ASSERT_TRUE(m.target);
  std::mt19937 rng(21);
  const std::vector<int32_t> prompt = RandomTokens(rng, 9, m.target->model().config().n_vocab);
  auto base = std::move(m.target->NewSequence()).value();
  ASSERT_TRUE(m.target->Prefill(*base, std::span<const int32_t>(prompt).first(prompt.size() - 1)).ok());
  const std::vector<int32_t> last = {prompt.back()};
  const int kSeeds = 500;
  std::map<int32_t, int> plain[2], spec[2];
  int64_t accepted = 0;
  auto seq = std::move(m.target->NewSequence()).value();
  for (int s = 0; s < kSeeds; ++s) {
    for (bool speculate : {false, true}) {
      GenerateOptions go;
      go.max_tokens = 3;
      go.stop_at_eog = false;
      go.sampling.temperature = 1.0f;
      go.sampling.top_k = 4;
      go.sampling.top_p = 1;
      go.sampling.min_p = 0;
      go.sampling.seed = static_cast<uint64_t>(s) + (speculate ? 1000000 : 0);  // independent draws
      if (speculate) {
        go.speculative.mode = SpecMode::kDraft;
        go.speculative.draft_engine = m.target.get();
      }
      ASSERT_TRUE(seq->Adopt(std::move(base->kv().View(base->n_pos())).value(), base->tokens()).ok());
      auto r = m.target->Generate(*seq, last, go, nullptr);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->tokens.size(), 3u);
      for (int pos = 0; pos < 2; ++pos) ++(speculate ? spec : plain)[pos][r->tokens[static_cast<size_t>(pos) + 1]];
      accepted += r->draft_accepted;
    }
  }
  EXPECT_GT(accepted, kSeeds / 5) << "drafts must be accepted often for this to test anything";
  for (int pos = 0; pos < 2; ++pos) {
    std::map<int32_t, int> all = plain[pos];
    for (auto& [t, c] : spec[pos]) all[t] += 0;
    double chi2 = 0;
    int dof = -1;
    for (auto& [t, unused] : all) {
      const double a = plain[pos][t], b = spec[pos][t];
      if (a + b < 10) continue;  // too rare to compare
      chi2 += (a - b) * (a - b) / (a + b);
      ++dof;
    }
    // Two-sample chi-square, dof = categories - 1 (mean dof, sd sqrt(2 dof)): 4 dof + 20 is far beyond
    // chance (p < 1e-4 for dof <= 20) and far below what a wrong acceptance rule gives.
    EXPECT_LT(chi2, 4.0 * dof + 20) << "position " << pos + 1 << " dof " << dof;
    EXPECT_GT(dof, 1);
  }
}

// A grammar-constrained request still writes only sentences of the grammar: a draft the mask forbids has
// p = 0 and is never accepted. Greedy constrained output equals the plain constrained output; sampled
// output is a sentence. Drafts are proposed (the target as its own unconstrained draft model, and
// prompt lookup over a list that repeats).
TEST(SpecGenerateTest, ConstrainedOutputStaysInTheGrammar) {
  Models m = MakeModels(kLlama);
  ASSERT_TRUE(m.target);
  auto vocab = MakeGrammarVocabulary(*m.target->tokenizer());
  auto g = grammar::ParseGbnf(R"(root ::= "[" item ("," item)* "]"
item ::= "\"" [a-z]{1,4} "\"")");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::vector<int32_t> prompt = m.target->tokenizer()->Encode("[\"ab\",\"cd\",\"ab\",\"cd\",\"ab\"", true, false);
  auto text = [&](const std::vector<int32_t>& ids) {
    std::string t;
    for (int32_t id : ids) {
      if (!m.target->tokenizer()->IsEog(id)) t += m.target->tokenizer()->TokenToPiece(id, false);
    }
    return t;
  };
  auto run = [&](GenerateOptions go) {
    grammar::GrammarMatcher matcher(*g, vocab);
    go.constraint = &matcher;
    auto seq = std::move(m.target->NewSequence()).value();
    auto r = m.target->Generate(*seq, prompt, go, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : GenerateResult{};
  };
  int64_t drafted = 0;
  for (int d = 0; d < 2; ++d) {
    for (float temp : {0.0f, 1.2f}) {
      for (uint64_t seed : {1, 2}) {
        GenerateOptions go;
        go.max_tokens = 60;
        go.sampling.temperature = temp;
        go.sampling.seed = seed;
        const GenerateResult plain = run(go);
        go.speculative.mode = d == 0 ? SpecMode::kNgram : SpecMode::kDraft;
        go.speculative.draft_engine = m.target.get();
        const GenerateResult spec = run(go);
        const std::string t = text(spec.tokens);
        if (spec.stop == StopReason::kEog) {
          EXPECT_TRUE(grammar::Matches(**g, t)) << "'" << t << "'";
        } else {
          EXPECT_TRUE(grammar::IsPrefix(**g, t)) << "'" << t << "'";
        }
        if (temp == 0) {
          EXPECT_EQ(spec.tokens, plain.tokens) << "drafter " << d;
        }
        drafted += spec.draft_tokens;
      }
    }
  }
  EXPECT_GT(drafted, 0);
}

TEST(SpecGenerateTest, DraftModelWithAnotherVocabularyIsRefused) {
  const std::string dir = testutil::MakeTempDir("specvocab");
  auto a = Load(testutil::GenModel(dir, "a", kLlama));
  auto b = Load(testutil::GenModel(
      dir, "b", "--arch qwen3 --tokenizer qwen3 --n-layer 1 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 3"));
  ASSERT_TRUE(a && b);
  const Status st = CheckDraftModel(*a, *b);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("draft model"), std::string::npos) << st.ToString();
  EXPECT_TRUE(CheckDraftModel(*a, *a).ok());
}

// Concurrent speculating jobs in the BatchRunner give the tokens and logprobs of solo runs: greedy
// ones bitwise those of plain decode, sampled ones those of a solo speculative run (same drafts, same
// RNG use), with both drafters, and the sequences hold the plain positions.
TEST(SpecBatchTest, ConcurrentSpeculatingJobsEqualSoloRuns) {
  Models m = MakeModels(kLlama);
  ASSERT_TRUE(m.target && m.other);
  std::vector<std::vector<int32_t>> prompts = Prompts(*m.target);
  std::mt19937 rng(4);
  for (int i = 0; i < 4; ++i) prompts.push_back(RandomTokens(rng, 15 + 20 * i, m.target->model().config().n_vocab));
  const int kJobs = static_cast<int>(prompts.size());
  auto options = [&](int i, bool spec) {
    GenerateOptions go;
    go.max_tokens = 30 + i;
    go.stop_at_eog = false;
    go.top_logprobs = i % 2 == 0 ? 2 : -1;
    if (i % 3 == 2) {
      go.sampling.temperature = 0.9f;
      go.sampling.seed = 50 + static_cast<uint64_t>(i);
      go.sampling.repeat_penalty = 1.1f;
    } else {
      go.sampling.temperature = 0;
    }
    if (spec) {
      go.speculative.mode = i % 2 == 0 ? SpecMode::kNgram : SpecMode::kDraft;
      go.speculative.draft_engine = i % 4 == 1 ? m.target.get() : m.other.get();
      go.speculative.draft_max = 6;
    }
    return go;
  };
  std::vector<GenerateResult> want;
  for (int i = 0; i < kJobs; ++i) {
    const bool sampled = i % 3 == 2;  // compared with a solo speculative run; greedy with a plain one
    want.push_back(Generate(*m.target, prompts[static_cast<size_t>(i)], options(i, sampled)).r);
  }
  BatchRunnerOptions ro;
  ro.max_seqs = 5;
  ro.step_tokens = 32;
  ro.draft_rows_per_step = 64;  // room for every job's drafts, so each drafts as it would alone
  BatchRunner runner(*m.target, ro);
  std::vector<GenerateResult> got(static_cast<size_t>(kJobs));
  std::vector<std::thread> threads;
  for (int i = 0; i < kJobs; ++i) {
    threads.emplace_back([&, i] {
      auto seq = std::move(m.target->NewSequence()).value();
      BatchJob job;
      job.seq = seq.get();
      job.prompt = prompts[static_cast<size_t>(i)];
      job.options = options(i, true);
      auto r = runner.Run(std::move(job));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(seq->n_pos(), static_cast<int64_t>(prompts[static_cast<size_t>(i)].size() + r->gen.tokens.size()) - 1);
      got[static_cast<size_t>(i)] = std::move(r->gen);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kJobs; ++i) ExpectSame(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], "job " + std::to_string(i));
  const BatchRunnerStats st = runner.stats();
  EXPECT_GT(st.draft_rows, 0u);
  EXPECT_GT(st.draft_accepted, 0u);
  EXPECT_LE(st.draft_accepted, st.draft_rows);
  EXPECT_EQ(st.completed, static_cast<uint64_t>(kJobs));
}

}  // namespace
}  // namespace ember
