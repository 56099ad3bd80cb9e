// Batch invariance across sequences (issue #16): the logits of a sequence are bitwise identical whether
// it is forwarded alone or as slices of batched steps beside any other sequences, at any step budget
// and thread count. Random mixes of 1-8 sequences of different lengths and arrival steps are compared
// with memcmp-equivalent row hashes against solo runs.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ember {
namespace {

uint64_t RowHash(const float* row, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, row + i, 4);
    h = (h ^ w) * 0x100000001B3ull;
  }
  return h;
}

// Hash of the logits at every position of `tokens`, forwarded alone one token at a time.
std::vector<uint64_t> SoloHashes(Engine& e, const std::vector<int32_t>& tokens) {
  auto seq = e.NewSequence();
  EXPECT_TRUE(seq.ok());
  const int64_t nv = e.model().config().n_vocab;
  std::vector<uint64_t> h;
  for (int32_t t : tokens) {
    auto logits = e.Decode(**seq, t);
    EXPECT_TRUE(logits.ok());
    h.push_back(RowHash(*logits, nv));
  }
  return h;
}

struct MixCase {
  const char* name;
  const char* gen_args;
  KvDtype kv;
};

class StepInvarianceTest : public ::testing::TestWithParam<MixCase> {};

TEST_P(StepInvarianceTest, SequencesBesideOthersMatchSoloRuns) {
  const std::string dir = testutil::MakeTempDir("stepinv");
  const std::string model = testutil::GenModel(dir, "m", GetParam().gen_args);
  std::map<int, std::unique_ptr<Engine>> engines;  // by thread count
  for (int threads : {1, 2}) {
    EngineOptions eo;
    eo.threads = threads;
    eo.kv_dtype = GetParam().kv;
    eo.load_tokenizer = false;
    auto e = Engine::Load(model, eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engines[threads] = std::move(*e);
  }
  Engine& ref_engine = *engines[2];
  const int64_t nv = ref_engine.model().config().n_vocab;
  std::mt19937 rng(17);
  auto rnd = [&rng](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
  for (int trial = 0; trial < 6; ++trial) {
    const int n_seqs = trial == 0 ? 1 : rnd(2, 8);
    Engine& engine = *engines[trial % 2 == 0 ? 2 : 1];
    const int64_t budget = rnd(1, 3) == 1 ? 8 : rnd(16, 96);
    std::vector<std::vector<int32_t>> toks(static_cast<size_t>(n_seqs));
    std::vector<int> arrival(static_cast<size_t>(n_seqs));
    for (int s = 0; s < n_seqs; ++s) {
      const int len = rnd(5, 120);
      for (int i = 0; i < len; ++i) toks[s].push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
      arrival[s] = rnd(0, 6);
    }
    std::vector<std::vector<uint64_t>> ref;
    for (const auto& t : toks) ref.push_back(SoloHashes(ref_engine, t));
    auto ctx = engine.NewStepContext(budget + n_seqs, n_seqs);
    std::vector<std::unique_ptr<Sequence>> seqs;
    for (int s = 0; s < n_seqs; ++s) seqs.push_back(std::move(engine.NewSequence()).value());
    std::vector<size_t> done(static_cast<size_t>(n_seqs), 0);
    int compared = 0, diffs = 0;
    for (int step = 0; step < 10000; ++step) {
      std::vector<StepSlice> slices;
      std::vector<int> who;
      int64_t left = budget + n_seqs;
      for (int s = 0; s < n_seqs && left > 0; ++s) {
        if (step < arrival[s] || done[s] == toks[s].size()) continue;
        // A decode-like single token or a prefill chunk of random size, within the step's room.
        const int64_t want = rnd(0, 3) == 0 ? 1 : rnd(1, 40);
        const int64_t n = std::min<int64_t>({want, left, static_cast<int64_t>(toks[s].size() - done[s])});
        slices.push_back({seqs[s].get(), std::span<const int32_t>(toks[s]).subspan(done[s], static_cast<size_t>(n)),
                          rnd(0, 4) != 0});
        who.push_back(s);
        left -= n;
      }
      if (slices.empty()) {
        bool all_done = true;
        for (int s = 0; s < n_seqs; ++s) all_done &= done[s] == toks[s].size();
        if (all_done) break;
        continue;
      }
      std::vector<Status> st;
      ASSERT_TRUE(engine.Step(*ctx, slices, &st).ok());
      for (size_t i = 0; i < slices.size(); ++i) {
        ASSERT_TRUE(st[i].ok()) << st[i].ToString();
        const int s = who[i];
        done[s] += slices[i].tokens.size();
        if (slices[i].logits) {
          ++compared;
          diffs += RowHash(ctx->logits(i), nv) != ref[s][done[s] - 1];
        } else {
          EXPECT_EQ(ctx->logits(i), nullptr);
        }
        EXPECT_EQ(seqs[s]->n_pos(), static_cast<int64_t>(done[s]));
      }
    }
    for (int s = 0; s < n_seqs; ++s) {
      EXPECT_EQ(done[s], toks[s].size());
      EXPECT_EQ(seqs[s]->tokens(), toks[s]);
    }
    EXPECT_GT(compared, n_seqs);
    EXPECT_EQ(diffs, 0) << "trial " << trial << ": " << n_seqs << " sequences, budget " << budget << ", "
                        << compared << " logit rows compared";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, StepInvarianceTest,
    ::testing::Values(
        MixCase{"llama_q8_0_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 5",
                KvDtype::kF16},
        MixCase{"qwen3_q4_k_kvf32", "--arch qwen3 --tokenizer qwen3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 1 --n-ff 256 --type q4_k --seed 6",
                KvDtype::kF32},
        MixCase{"gemma3_q8_0_window48", "--arch gemma3 --tokenizer llama3 --n-layer 3 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 "
                "--sliding-window 48 --swa-pattern 3 --type q8_0 --seed 7",
                KvDtype::kF16},
        // Served head shapes (issue #18): head_dim 64 and 128, GQA 1, 4 and 8, on both KV types, so
        // the shared K/V widening and paired V accumulation of a prefill tile meet decode's path. F32
        // weights: a quantized matmul rounds its input, which would hide a 1-ulp attention change.
        MixCase{"llama_hd64_gqa4_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 8 --n-head-kv 2 "
                "--head-dim 64 --n-ff 128 --type f32 --seed 8",
                KvDtype::kF16},
        MixCase{"llama_hd128_gqa8_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 8 --n-head-kv 1 "
                "--head-dim 128 --n-ff 128 --type f32 --seed 9",
                KvDtype::kF16},
        MixCase{"llama_hd128_gqa1_kvf32", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 2 --n-head-kv 2 "
                "--head-dim 128 --n-ff 128 --type f32 --seed 10",
                KvDtype::kF32},
        MixCase{"llama_hd64_gqa4_kvf32", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 8 --n-head-kv 2 "
                "--head-dim 64 --n-ff 128 --type f32 --seed 11",
                KvDtype::kF32},
        // qwen35 hybrid (issue #31): three gated-delta-net layers, then attention; the conv window and
        // the recurrent state must come out bitwise the same however the rows were split or batched.
        MixCase{"qwen35_f32_kvf16", "--arch qwen35 --tokenizer llama3 --n-layer 4 --n-embd 64 --n-head 4 --n-head-kv 2 "
                "--head-dim 16 --n-ff 128 --ssm-state 16 --ssm-groups 2 --ssm-heads 4 --type f32 --seed 16",
                KvDtype::kF16},
        // qwen3moe (issue #32): the rows of a mixed step are grouped by expert across sequences.
        MixCase{"qwen3moe_f32_kvf32", "--arch qwen3moe --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 "
                "--n-ff 128 --experts 8 --experts-used 2 --expert-ff 32 --type f32 --seed 18",
                KvDtype::kF32},
        // qwen35moe: the recurrent state and the routed and shared experts, rows of several sequences.
        MixCase{"qwen35moe_f32_kvf16", "--arch qwen35moe --tokenizer llama3 --n-layer 4 --n-embd 64 --n-head 4 "
                "--n-head-kv 2 --head-dim 16 --n-ff 128 --ssm-state 16 --ssm-groups 2 --ssm-heads 4 --experts 8 "
                "--experts-used 2 --expert-ff 32 --shared-expert-ff 48 --type f32 --seed 19",
                KvDtype::kF16}),
    [](const ::testing::TestParamInfo<MixCase>& info) { return std::string(info.param.name); });

// A slice that cannot run fails alone: the other sequences of the step go on, bitwise as solo runs.
TEST(StepTest, BadSliceFailsAloneAndMalformedStepsAreRefused) {
  const std::string dir = testutil::MakeTempDir("stepbad");
  const std::string model = testutil::GenModel(
      dir, "m", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 3");
  EngineOptions eo;
  eo.threads = 2;
  eo.load_tokenizer = false;
  eo.n_ctx = 64;
  auto engine = std::move(Engine::Load(model, eo)).value();
  const int64_t nv = engine->model().config().n_vocab;
  const std::vector<int32_t> good = {1, 2, 3, 4, 5};
  const std::vector<uint64_t> ref = SoloHashes(*engine, good);
  auto ctx = engine->NewStepContext(80, 3);
  auto a = std::move(engine->NewSequence()).value();
  auto b = std::move(engine->NewSequence()).value();
  auto c = std::move(engine->NewSequence()).value();
  const std::vector<int32_t> bad_id = {1, static_cast<int32_t>(nv)};
  const std::vector<int32_t> too_long(65, 1);
  std::vector<StepSlice> slices = {{a.get(), good, true}, {b.get(), bad_id, true}, {c.get(), too_long, true}};
  std::vector<Status> st;
  ASSERT_TRUE(engine->Step(*ctx, slices, &st).ok());
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(st[1].code(), StatusCode::kInvalidArgument) << st[1].ToString();
  EXPECT_EQ(st[2].code(), StatusCode::kResourceExhausted) << st[2].ToString();
  EXPECT_EQ(b->n_pos(), 0);
  EXPECT_EQ(c->n_pos(), 0);
  EXPECT_EQ(ctx->logits(1), nullptr);
  ASSERT_NE(ctx->logits(0), nullptr);
  EXPECT_EQ(RowHash(ctx->logits(0), nv), ref.back());
  // Malformed: one sequence twice; more slices than the context has room for; rows over the budget.
  std::vector<StepSlice> twice = {{a.get(), good, true}, {a.get(), good, true}};
  EXPECT_EQ(engine->Step(*ctx, twice, &st).code(), StatusCode::kInvalidArgument);
  auto d = std::move(engine->NewSequence()).value();
  std::vector<StepSlice> four = {{a.get(), good, false}, {b.get(), good, false}, {c.get(), good, false}, {d.get(), good, false}};
  EXPECT_EQ(engine->Step(*ctx, four, &st).code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> rows81(81, 1);
  std::vector<StepSlice> big = {{d.get(), rows81, false}};
  EXPECT_EQ(engine->Step(*ctx, big, &st).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->n_pos(), 5);  // nothing ran for the malformed steps
  EXPECT_EQ(d->n_pos(), 0);
}

}  // namespace
}  // namespace ember
