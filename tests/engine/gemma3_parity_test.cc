// Parity of the gemma3 forward pass with llama.cpp (node-llama-cpp peer) on sequences several times
// longer than the sliding window (window 128, 640 tokens): local layers must attend to (p - 128, p]
// only, global layers to everything, each with its own RoPE base, plus q/k norm, post-norms, GeGLU
// and the embedding scale. Teacher-forced KL(llama.cpp ‖ ember) on 32 positions spread over the
// sequence (a probability row over the 262k Gemma vocabulary costs ~1 s through the binding), and
// greedy continuations: ember generates 32 tokens after a 608-token prompt and llama.cpp's argmax at
// every step must be ember's next token. Fails (never skips) when node or the peer is missing.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "long_parity.h"

namespace ember {
namespace {

using testutil::LongParityCase;

constexpr int kPrompt = 608, kGen = 32, kTotal = kPrompt + kGen, kRows = 32;

// 6 layers with the Gemma 3 pattern (layers 0-4 local, 5 global), GQA 2, untied output.
constexpr const char* kShape =
    "--arch gemma3 --tokenizer gemma3 --n-layer 6 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 "
    "--sliding-window 128 --swa-pattern 6 --ctx 2048 --untied";

const std::vector<LongParityCase>& Cases() {
  static const std::vector<LongParityCase> cases = {
      {"gemma3_f32_greedy", "--type f32 --output-std 2 --seed 21", "f32", 1e-4, 1e-3, true},
      {"gemma3_f16_greedy", "--type f16 --output-std 2 --seed 22", "f16", 1e-4, 1e-3, true},
      {"gemma3_q8_0", "--type q8_0 --seed 23", "f32", 1e-3, 0, false},
  };
  return cases;
}

class Gemma3ParityTest : public ::testing::TestWithParam<LongParityCase> {};

TEST_P(Gemma3ParityTest, MatchesLlamaCppPastTheWindow) {
  const LongParityCase& gc = GetParam();
  const std::string dir = testutil::MakeTempDir(gc.name);
  const std::string model = testutil::GenModel(dir, gc.name, std::string(kShape) + " " + gc.gen_args);
  auto engine = testutil::LoadParityEngine(model, gc);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;
  ASSERT_EQ(e.model().config().n_swa, 128);
  ASSERT_TRUE(e.kv_config().kinds[0].kind == StateKind::kWindow && e.kv_config().kinds[5].kind == StateKind::kFull);
  {  // A generating sequence's window layers really release what falls out of reach.
    auto seq = e.NewSequence();
    ASSERT_TRUE(seq.ok());
    std::vector<int32_t> ids(300, 5);
    ASSERT_TRUE(e.Prefill(**seq, ids).ok());
    EXPECT_GT((*seq)->kv().held_from(0), 0);
  }

  testutil::LongParitySpec spec;  // 32 rows spread over the sequence, most of them past the window
  spec.prompt = kPrompt;
  spec.gen = kGen;
  spec.rows = testutil::EvenRows(kTotal, kRows);
  spec.chunks = {16};
  spec.seed = 17;
  spec.kv = gc.kv;
  const testutil::LongParityResult r = testutil::RunLongParity(e, model, dir, spec);
  ASSERT_EQ(r.kl.size(), spec.rows.size());
  double sum_past = 0;
  int n_past = 0;
  for (size_t i = 0; i < spec.rows.size(); ++i) {
    if (spec.rows[i] >= 128) {
      sum_past += r.kl[i];
      ++n_past;
    }
  }
  std::printf("[gemma3 parity] %-18s kv=%s  KL mean %.3e  max %.3e  (mean past the window %.3e, %d rows)\n",
              gc.name, gc.kv, r.mean(), r.max(), sum_past / n_past, n_past);
  EXPECT_LE(r.mean(), gc.max_mean_kl);
  if (gc.max_kl > 0) {
    EXPECT_LE(r.max(), gc.max_kl);
  }
  if (gc.check_greedy) {
    EXPECT_EQ(r.greedy_mismatch, 0) << "llama.cpp's greedy choice differs from ember's at " << r.greedy_mismatch << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Gemma3ParityTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<LongParityCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
