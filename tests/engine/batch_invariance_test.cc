// docs/cache-spec.md §6: logits of position i are bitwise identical whether i was computed inside a prefill
// chunk of any size or as a single decode step, and a sequence continued from a shared KV view gives
// bitwise the logits of one computed from scratch.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ember {
namespace {

// A hash of a logits row's bits (two floats per step): rows are compared by hash so 300 x 128k floats
// need not be kept. Any bit difference changes it with overwhelming probability.
uint64_t RowHash(const float* row, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i + 1 < n; i += 2) {
    uint64_t w;
    std::memcpy(&w, row + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  uint32_t last;
  std::memcpy(&last, row + n - 1, 4);
  return (h ^ last) * 0x9E3779B97F4A7C15ull;
}

// Evaluates `tokens` on a fresh sequence in chunks of the given sizes; returns one hash per position.
std::vector<uint64_t> EvalChunked(Engine& e, const std::vector<int32_t>& tokens, const std::vector<int64_t>& chunks) {
  auto seq = e.NewSequence(/*all_logits=*/true);
  EXPECT_TRUE(seq.ok());
  const int64_t nv = e.model().config().n_vocab;
  std::vector<uint64_t> hashes;
  std::vector<float> rows;
  size_t at = 0;
  for (int64_t len : chunks) {
    rows.clear();
    std::span<const int32_t> part(tokens.data() + at, static_cast<size_t>(len));
    EXPECT_TRUE(e.Evaluate(**seq, part, len, &rows).ok());
    for (int64_t i = 0; i < len; ++i) hashes.push_back(RowHash(rows.data() + i * nv, nv));
    at += static_cast<size_t>(len);
  }
  EXPECT_EQ(at, tokens.size());
  return hashes;
}

std::vector<int64_t> RandomChunks(std::mt19937& rng, int64_t total, int64_t max_chunk) {
  std::vector<int64_t> chunks;
  for (int64_t left = total; left > 0;) {
    const int64_t len = std::min<int64_t>(left, 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(max_chunk)));
    chunks.push_back(len);
    left -= len;
  }
  return chunks;
}

struct InvCase {
  const char* name;  // the ctest name suffix (the default would print the struct's bytes, pointers included)
  const char* gen_args;
  KvDtype kv;
};

class BatchInvarianceTest : public ::testing::TestWithParam<InvCase> {};

TEST_P(BatchInvarianceTest, LogitsIndependentOfChunking) {
  const std::string dir = testutil::MakeTempDir("batchinv");
  const std::string model = testutil::GenModel(dir, "m", GetParam().gen_args);
  {
    const KvDtype kv = GetParam().kv;
    EngineOptions eo;
    eo.threads = 2;
    eo.kv_dtype = kv;
    eo.load_tokenizer = false;
    eo.ubatch = 64;
    auto engine = Engine::Load(model, eo);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    const int64_t nv = (*engine)->model().config().n_vocab;
    std::mt19937 rng(11);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 300; ++i) tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
    // Reference: one token per step (pure decode).
    const std::vector<uint64_t> ref = EvalChunked(**engine, tokens, std::vector<int64_t>(300, 1));
    for (int trial = 0; trial < 2; ++trial) {
      const auto chunks = RandomChunks(rng, 300, trial == 0 ? 64 : 37);
      const std::vector<uint64_t> got = EvalChunked(**engine, tokens, chunks);
      ASSERT_EQ(got.size(), ref.size());
      int diff = 0;
      for (size_t i = 0; i < ref.size(); ++i) diff += got[i] != ref[i];
      EXPECT_EQ(diff, 0) << "positions whose logits differ from the decode-step reference (trial " << trial << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvarianceTest,
    ::testing::Values(
        InvCase{"llama_q8_0_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 5",
                KvDtype::kF16},
        InvCase{"qwen3_f16_kvf32", "--arch qwen3 --tokenizer qwen3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 1 --n-ff 96 --type f16 --seed 6",
                KvDtype::kF32},
        // gemma3: window 48 (margin 32) so 300 tokens slide well past it; layers 0, 1 local, 2 global.
        InvCase{"gemma3_q8_0_window48", "--arch gemma3 --tokenizer llama3 --n-layer 3 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 "
                "--sliding-window 48 --swa-pattern 3 --type q8_0 --seed 7",
                KvDtype::kF16},
        // Served head shapes (issue #18): a prefill tile widens K/V once and pairs queries, decode
        // runs one position's GQA group; head_dim 64 / 128, GQA 4 / 8 / 3 / 1, both KV types. F32 weights: a
        // quantized matmul rounds its input (to int8 / fp16), which would hide a 1-ulp attention change.
        InvCase{"llama_hd64_gqa4_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 8 --n-head-kv 2 "
                "--head-dim 64 --n-ff 128 --type f32 --seed 12",
                KvDtype::kF16},
        InvCase{"llama_hd128_gqa8_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 8 --n-head-kv 1 "
                "--head-dim 128 --n-ff 128 --type f32 --seed 13",
                KvDtype::kF16},
        // GQA 3 (the 0.6B shape, H12/KV4): an odd group pairs queries of different positions.
        InvCase{"llama_hd128_gqa3_kvf16", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 6 --n-head-kv 2 "
                "--head-dim 128 --n-ff 128 --type f32 --seed 15",
                KvDtype::kF16},
        InvCase{"llama_hd128_gqa1_kvf32", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 2 --n-head-kv 2 "
                "--head-dim 128 --n-ff 128 --type f32 --seed 14",
                KvDtype::kF32},
        // qwen35 hybrid (issue #31): three gated-delta-net layers, then attention; the conv window and
        // the recurrent state must come out bitwise the same however the rows were split or batched.
        InvCase{"qwen35_f32_kvf16", "--arch qwen35 --tokenizer llama3 --n-layer 4 --n-embd 64 --n-head 4 --n-head-kv 2 "
                "--head-dim 16 --n-ff 128 --ssm-state 16 --ssm-groups 2 --ssm-heads 4 --type f32 --seed 16",
                KvDtype::kF16},
        // qwen3moe (issue #32): rows grouped by expert, so an expert's matmul sees a different set of rows
        // in every split; a row's output must not notice. Q8_0: the grouped rows are quantized together.
        InvCase{"qwen3moe_q8_0_kvf16", "--arch qwen3moe --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 "
                "--n-ff 128 --experts 8 --experts-used 3 --expert-ff 64 --type q8_0 --seed 17",
                KvDtype::kF16}),
    [](const ::testing::TestParamInfo<InvCase>& info) { return std::string(info.param.name); });

// The view tests' setup: a 2-thread engine (no tokenizer, ubatch 32) on a generated model, a random
// prompt, and the cold run of a sampled 16-token generation from scratch.
struct ViewRun {
  std::unique_ptr<Engine> engine;
  std::vector<int32_t> prompt;
  GenerateOptions go;
  std::unique_ptr<Sequence> cold;
  GenerateResult cold_gen;
};

void StartViewRun(const char* tag, const std::string& args, int prompt_len, uint32_t seed, ViewRun* r) {
  const std::string dir = testutil::MakeTempDir(tag);
  const std::string model = testutil::GenModel(dir, "m", args);
  EngineOptions eo;
  eo.threads = 2;
  eo.load_tokenizer = false;
  eo.ubatch = 32;
  auto engine = Engine::Load(model, eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  r->engine = std::move(*engine);
  const uint32_t nv = static_cast<uint32_t>(r->engine->model().config().n_vocab);
  std::mt19937 rng(seed);
  for (int i = 0; i < prompt_len; ++i) r->prompt.push_back(static_cast<int32_t>(rng() % nv));
  r->go.max_tokens = 16;
  r->go.sampling.temperature = 0.9f;
  r->go.sampling.seed = 42;
  r->go.stop_at_eog = false;
  auto cold = r->engine->NewSequence();
  ASSERT_TRUE(cold.ok());
  r->cold = std::move(*cold);
  auto cold_gen = r->engine->Generate(*r->cold, r->prompt, r->go, nullptr);
  ASSERT_TRUE(cold_gen.ok());
  r->cold_gen = std::move(*cold_gen);
}

// A donor sequence holding the prompt's first `donor_len` tokens and then a different token.
std::unique_ptr<Sequence> MakeDonor(ViewRun& r, int64_t donor_len) {
  auto donor = r.engine->NewSequence();
  EXPECT_TRUE(donor.ok());
  std::vector<int32_t> tokens(r.prompt.begin(), r.prompt.begin() + donor_len);
  tokens.push_back(1);
  EXPECT_TRUE(r.engine->Prefill(**donor, tokens).ok());
  return std::move(*donor);
}

// Serves the prompt's first `at` tokens from a view of the donor and generates the rest: the tokens and
// last logits equal the cold run's, and the donor's bytes are unchanged. Returns the warm sequence.
std::unique_ptr<Sequence> ExpectViewContinuesColdRun(ViewRun& r, Sequence& donor, int64_t at) {
  VectorSink before;
  EXPECT_TRUE(donor.kv().Serialize(before).ok());
  auto view = donor.kv().View(at);
  EXPECT_TRUE(view.ok()) << view.status().ToString();
  auto warm = r.engine->NewSequence();
  EXPECT_TRUE(warm.ok());
  if (!view.ok() || !warm.ok()) return nullptr;
  EXPECT_TRUE((*warm)->Adopt(std::move(*view), std::vector<int32_t>(r.prompt.begin(), r.prompt.begin() + at)).ok());
  std::vector<int32_t> rest(r.prompt.begin() + at, r.prompt.end());
  auto warm_gen = r.engine->Generate(**warm, rest, r.go, nullptr);
  EXPECT_TRUE(warm_gen.ok());
  if (!warm_gen.ok()) return nullptr;
  EXPECT_EQ(warm_gen->tokens, r.cold_gen.tokens);
  // The states are equal too: one more token forwarded after each gives bitwise the same logits.
  auto warm_next = r.engine->Decode(**warm, 7);
  auto cold_next = r.engine->Decode(*r.cold, 7);
  EXPECT_TRUE(warm_next.ok() && cold_next.ok());
  if (!warm_next.ok() || !cold_next.ok()) return nullptr;
  const size_t row_bytes = static_cast<size_t>(r.engine->model().config().n_vocab) * 4;
  EXPECT_EQ(std::memcmp(*warm_next, *cold_next, row_bytes), 0);
  VectorSink after;
  EXPECT_TRUE(donor.kv().Serialize(after).ok());
  EXPECT_EQ(before.bytes(), after.bytes());
  return std::move(*warm);
}

// A request served from a cached prefix (a View of a donor's state) continues bitwise like a cold run,
// and the donor is unaffected by it.
TEST(CacheDeterminismTest, ViewContinuationEqualsColdRun) {
  ViewRun r;
  ASSERT_NO_FATAL_FAILURE(StartViewRun(
      "viewdet", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 4 --n-ff 128 --type q4_0 --seed 8",
      90, 3, &r));
  // Donor holds a different continuation of the first 70 tokens; a view at 45 (mid-block) serves the prefix.
  auto donor = MakeDonor(r, 70);
  auto warm = ExpectViewContinuesColdRun(r, *donor, 45);
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(warm->tokens(), r.cold->tokens());
}

// The same for gemma3 with window layers: a view taken where the donor's window layers still hold what
// the trim needs continues bitwise like a cold run; a view past that point is refused (never served).
TEST(CacheDeterminismTest, Gemma3WindowViewContinuationEqualsColdRun) {
  ViewRun r;
  ASSERT_NO_FATAL_FAILURE(StartViewRun("viewdet-gemma3",
                                       "--arch gemma3 --tokenizer llama3 --n-layer 3 --n-embd 64 --n-head 4 --n-head-kv 2 "
                                       "--n-ff 128 --sliding-window 40 --swa-pattern 3 --type f16 --seed 10",
                                       200, 4, &r));
  ASSERT_EQ(r.engine->kv_config().WindowMargin(40), 32);
  // Donor: 170 prompt tokens + 1 other (171 positions); window layers hold from (171 - 72) / 32 * 32 = 96.
  auto donor = MakeDonor(r, 170);
  ASSERT_EQ(donor->kv().held_from(0), 96);
  EXPECT_FALSE(donor->kv().View(135).ok());  // needs [95, 135): 95 is gone
  auto warm = ExpectViewContinuesColdRun(r, *donor, 150);  // mid-block, needs [110, 150)
  ASSERT_NE(warm, nullptr);
  // Both sequences ended with the same window: equal KV bytes (held range included).
  VectorSink a, b;
  ASSERT_TRUE(warm->kv().Serialize(a).ok());
  ASSERT_TRUE(r.cold->kv().Serialize(b).ok());
  EXPECT_EQ(a.bytes(), b.bytes());
}

}  // namespace
}  // namespace ember
