// Parity of the qwen3moe forward pass (routed experts, model/moe.h) with llama.cpp (node-llama-cpp peer)
// over 640 positions. ember evaluates the sequence in chunks of uneven sizes (7, 64, 33, 1, ...), so an
// expert's rows in a step range from one to dozens and experts no row chose are skipped; KL(llama.cpp ‖
// ember) on 32 rows spread over the sequence, and greedy continuations at F32: ember generates 32 tokens
// after a 608-token prompt and llama.cpp's argmax at every step must be ember's next token. Fails (never
// skips) when node or the peer is missing.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "long_parity.h"

namespace ember {
namespace {

using testutil::LongParityCase;

constexpr int kPrompt = 608, kGen = 32, kTotal = kPrompt + kGen, kRows = 32;

constexpr const char* kShape =
    "--arch qwen3moe --tokenizer qwen3 --n-layer 3 --n-embd 128 --n-head 4 --n-head-kv 2 --head-dim 32 --n-ff 256 "
    "--ctx 4096 --untied";

const std::vector<LongParityCase>& Cases() {
  static const std::vector<LongParityCase> cases = {
      {"qwen3moe_f32_greedy", "--type f32 --experts 16 --experts-used 4 --expert-ff 64 --output-std 2 --seed 41", "f32",
       1e-4, 1e-3, true},
      {"qwen3moe_f16", "--type f16 --experts 8 --experts-used 2 --expert-ff 96 --output-std 2 --seed 42", "f16", 1e-4,
       1e-3, false},
      {"qwen3moe_q8_0", "--type q8_0 --experts 32 --experts-used 8 --expert-ff 64 --seed 43", "f32", 1e-3, 0, false},
  };
  return cases;
}

class Qwen3MoeParityTest : public ::testing::TestWithParam<LongParityCase> {};

TEST_P(Qwen3MoeParityTest, MatchesLlamaCppAcrossUnevenChunks) {
  const LongParityCase& hc = GetParam();
  const std::string dir = testutil::MakeTempDir(hc.name);
  const std::string model = testutil::GenModel(dir, hc.name, std::string(kShape) + " " + hc.gen_args);
  auto engine = testutil::LoadParityEngine(model, hc);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->model().config().moe());

  testutil::LongParitySpec spec;
  spec.prompt = kPrompt;
  spec.gen = kGen;
  spec.rows = testutil::EvenRows(kTotal, kRows);
  spec.chunks = {7, 64, 33, 1, 50, 64, 2, 19};  // odd lengths, a single token and full ubatches
  spec.seed = 47;
  spec.kv = hc.kv;
  const testutil::LongParityResult r = testutil::RunLongParity(**engine, model, dir, spec);
  ASSERT_EQ(r.kl.size(), spec.rows.size());
  std::printf("[qwen3moe parity] %-20s kv=%s  KL mean %.3e  max %.3e over %d rows\n", hc.name, hc.kv, r.mean(), r.max(),
              kRows);
  EXPECT_LE(r.mean(), hc.max_mean_kl);
  if (hc.max_kl > 0) {
    EXPECT_LE(r.max(), hc.max_kl);
  }
  if (hc.check_greedy) {
    EXPECT_EQ(r.greedy_mismatch, 0) << "llama.cpp's greedy choice differs from ember's at " << r.greedy_mismatch << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Qwen3MoeParityTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<LongParityCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
