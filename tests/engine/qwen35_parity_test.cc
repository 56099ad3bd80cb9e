// Parity of the qwen35 (and qwen35moe) hybrid forward pass (gated delta net + gated attention, model/delta_net.h) with
// llama.cpp (node-llama-cpp peer) over 640 positions: three delta-net layers then one attention layer,
// twice, with 4 v heads sharing 2 q/k heads (the head mapping), partial RoPE and the output gates.
// ember evaluates the sequence in chunks of uneven sizes (7, 64, 33, 1, ...) so the conv window and the
// recurrent state cross every kind of boundary; KL(llama.cpp ‖ ember) on 32 rows spread over the
// sequence, and greedy continuations: ember generates 32 tokens after a 608-token prompt and llama.cpp's
// argmax at every step must be ember's next token. Fails (never skips) when node or the peer is missing.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "long_parity.h"

namespace ember {
namespace {

using testutil::LongParityCase;

constexpr int kPrompt = 608, kGen = 32, kTotal = kPrompt + kGen, kRows = 32;

constexpr const char* kShape =
    "--tokenizer qwen3 --n-layer 8 --n-embd 128 --n-head 4 --n-head-kv 2 --head-dim 32 --n-ff 256 "
    "--ssm-state 32 --ssm-groups 2 --ssm-heads 4 --ssm-conv 4 --full-attention-interval 4 --rope-dims 16 "
    "--ctx 4096 --untied";

const std::vector<LongParityCase>& Cases() {
  static const std::vector<LongParityCase> cases = {
      {"qwen35_f32_greedy", "--arch qwen35 --type f32 --output-std 2 --seed 31", "f32", 1e-4, 1e-3, true},
      // With an MTP block after the trunk (nextn_predict_layers 1): loaded by name, never run, on both sides.
      {"qwen35_f16_mtp", "--arch qwen35 --type f16 --output-std 2 --mtp-layers 1 --seed 32", "f16", 1e-4, 1e-3, false},
      {"qwen35_q8_0", "--arch qwen35 --type q8_0 --seed 33", "f32", 1e-3, 0, false},
      // qwen35moe (issue #32): the same hybrid trunk with routed experts and a gated shared expert.
      {"qwen35moe_f32_greedy", "--arch qwen35moe --type f32 --experts 16 --experts-used 4 --expert-ff 64 "
       "--shared-expert-ff 96 --output-std 2 --seed 34", "f32", 1e-4, 1e-3, true},
      {"qwen35moe_q8_0", "--arch qwen35moe --type q8_0 --experts 8 --experts-used 2 --expert-ff 64 --seed 35", "f32",
       1e-3, 0, false},
  };
  return cases;
}

class Qwen35ParityTest : public ::testing::TestWithParam<LongParityCase> {};

TEST_P(Qwen35ParityTest, MatchesLlamaCppAcrossUnevenChunks) {
  const LongParityCase& hc = GetParam();
  const std::string dir = testutil::MakeTempDir(hc.name);
  const std::string model = testutil::GenModel(dir, hc.name, std::string(kShape) + " " + hc.gen_args);
  auto engine = testutil::LoadParityEngine(model, hc);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->model().config().is_recurrent(0) && !(*engine)->model().config().is_recurrent(3));
  ASSERT_EQ((*engine)->kv_config().kinds[0].kind, StateKind::kRecurrent);

  testutil::LongParitySpec spec;
  spec.prompt = kPrompt;
  spec.gen = kGen;
  spec.rows = testutil::EvenRows(kTotal, kRows);
  spec.chunks = {7, 64, 33, 1, 50, 64, 2, 19};  // odd lengths, a single token and full ubatches
  spec.seed = 37;
  spec.kv = hc.kv;
  const testutil::LongParityResult r = testutil::RunLongParity(**engine, model, dir, spec);
  ASSERT_EQ(r.kl.size(), spec.rows.size());
  std::printf("[qwen35 parity] %-18s kv=%s  KL mean %.3e  max %.3e over %d rows\n", hc.name, hc.kv, r.mean(), r.max(), kRows);
  EXPECT_LE(r.mean(), hc.max_mean_kl);
  if (hc.max_kl > 0) {
    EXPECT_LE(r.max(), hc.max_kl);
  }
  if (hc.check_greedy) {
    EXPECT_EQ(r.greedy_mismatch, 0) << "llama.cpp's greedy choice differs from ember's at " << r.greedy_mismatch << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Qwen35ParityTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<LongParityCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
