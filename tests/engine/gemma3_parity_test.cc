// Parity of the gemma3 forward pass with llama.cpp (node-llama-cpp peer) on sequences several times
// longer than the sliding window (window 128, 640 tokens): local layers must attend to (p - 128, p]
// only, global layers to everything, each with its own RoPE base, plus q/k norm, post-norms, GeGLU
// and the embedding scale. Teacher-forced KL(llama.cpp ‖ ember) on 32 positions spread over the
// sequence (a probability row over the 262k Gemma vocabulary costs ~1 s through the binding), and
// greedy continuations: ember generates 32 tokens after a 608-token prompt and llama.cpp's argmax at
// every step must be ember's next token. Fails (never skips) when node or the peer is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ember {
namespace {

using testutil::RunCommand;

struct GemmaCase {
  const char* name;
  const char* gen_args;
  const char* kv;
  double max_mean_kl;
  double max_kl;  // <= 0: not checked
  bool check_greedy;
};

constexpr int kPrompt = 608, kGen = 32, kTotal = kPrompt + kGen, kRows = 32;

// 6 layers with the Gemma 3 pattern (layers 0-4 local, 5 global), GQA 2, untied output.
constexpr const char* kShape =
    "--arch gemma3 --tokenizer gemma3 --n-layer 6 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 "
    "--sliding-window 128 --swa-pattern 6 --ctx 2048 --untied";

const std::vector<GemmaCase>& Cases() {
  static const std::vector<GemmaCase> cases = {
      {"gemma3_f32_greedy", "--type f32 --output-std 2 --seed 21", "f32", 1e-4, 1e-3, true},
      {"gemma3_f16_greedy", "--type f16 --output-std 2 --seed 22", "f16", 1e-4, 1e-3, true},
      {"gemma3_q8_0", "--type q8_0 --seed 23", "f32", 1e-3, 0, false},
  };
  return cases;
}

class Gemma3ParityTest : public ::testing::TestWithParam<GemmaCase> {};

TEST_P(Gemma3ParityTest, MatchesLlamaCppPastTheWindow) {
  const GemmaCase& gc = GetParam();
  const std::string dir = testutil::MakeTempDir(gc.name);
  const std::string model = testutil::GenModel(dir, gc.name, std::string(kShape) + " " + gc.gen_args);
  EngineOptions eo;
  eo.threads = 2;
  eo.kv_dtype = std::string(gc.kv) == "f32" ? KvDtype::kF32 : KvDtype::kF16;
  eo.ubatch = 64;
  eo.load_tokenizer = false;
  auto engine = Engine::Load(model, eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;
  const int64_t nv = e.model().config().n_vocab;
  ASSERT_EQ(e.model().config().n_swa, 128);
  ASSERT_TRUE(e.kv_config().kinds[0].kind == StateKind::kWindow && e.kv_config().kinds[5].kind == StateKind::kFull);

  std::mt19937 rng(17);
  std::vector<int32_t> tokens;
  for (int i = 0; i < kPrompt; ++i) tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
  auto seq = e.NewSequence();
  ASSERT_TRUE(seq.ok());
  GenerateOptions go;
  go.max_tokens = kGen;
  go.sampling.temperature = 0;
  go.stop_at_eog = false;
  auto gen = e.Generate(**seq, tokens, go, nullptr);
  ASSERT_TRUE(gen.ok()) << gen.status().ToString();
  ASSERT_EQ(gen->tokens.size(), static_cast<size_t>(kGen));
  // The generating sequence's window layers really released what fell out of reach.
  EXPECT_GT((*seq)->kv().held_from(0), 0);
  tokens.insert(tokens.end(), gen->tokens.begin(), gen->tokens.end());

  // Rows compared: 32 positions spread over the sequence, most of them past the window.
  std::vector<int32_t> rows;
  for (int i = 0; i < kRows; ++i) rows.push_back(i * (kTotal / kRows) + kTotal / kRows - 1);
  std::vector<float> ours(rows.size() * static_cast<size_t>(nv));
  {
    auto eval_seq = e.NewSequence(/*all_logits=*/true);
    ASSERT_TRUE(eval_seq.ok());
    std::vector<float> chunk;
    for (int64_t at = 0; at < kTotal; at += 16) {
      chunk.clear();
      ASSERT_TRUE(e.Evaluate(**eval_seq, std::span<const int32_t>(tokens.data() + at, 16), 16, &chunk).ok());
      for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r] >= at && rows[r] < at + 16) {
          std::memcpy(ours.data() + r * nv, chunk.data() + (rows[r] - at) * nv, static_cast<size_t>(nv) * 4);
        }
      }
    }
  }

  const std::string out = dir + "/peer.f32";
  const auto r = RunCommand("node " + testutil::PeerRunner() + " logits-rows " + model + " --tokens " + testutil::JoinIds(tokens) +
                            " --rows " + testutil::JoinIds(rows) + " --argmax-from " + std::to_string(kPrompt - 1) + " --out " +
                            out + " --kv " + gc.kv + " --threads 2");
  ASSERT_EQ(r.exit_code, 0) << "the llama.cpp peer failed (node missing?): " << r.out;
  const auto meta = nlohmann::json::parse(r.out);
  ASSERT_EQ(meta["n_vocab"].get<int64_t>(), nv);
  std::ifstream f(out, std::ios::binary);
  std::vector<float> peer(rows.size() * static_cast<size_t>(nv));
  f.read(reinterpret_cast<char*>(peer.data()), static_cast<std::streamsize>(peer.size() * 4));
  ASSERT_TRUE(f.good()) << "short peer output";

  double sum = 0, mx = 0, sum_past = 0;
  int n_past = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double kl = testutil::KlFromProbs(peer.data() + i * nv, ours.data() + i * nv, nv);
    sum += kl;
    mx = std::max(mx, kl);
    if (rows[i] >= 128) {
      sum_past += kl;
      ++n_past;
    }
  }
  const double mean = sum / static_cast<double>(rows.size());
  std::printf("[gemma3 parity] %-18s kv=%s  KL mean %.3e  max %.3e  (mean past the window %.3e, %d rows)\n",
              gc.name, gc.kv, mean, mx, sum_past / n_past, n_past);
  EXPECT_LE(mean, gc.max_mean_kl);
  if (gc.max_kl > 0) {
    EXPECT_LE(mx, gc.max_kl);
  }
  if (gc.check_greedy) {
    const auto& argmax = meta["argmax"];
    ASSERT_EQ(argmax.size(), static_cast<size_t>(kGen + 1));
    int mismatch = 0;
    for (const auto& a : argmax) {
      const int64_t pos = a[0].get<int64_t>();
      if (pos + 1 < kTotal && a[1].get<int32_t>() != tokens[static_cast<size_t>(pos + 1)]) ++mismatch;
    }
    EXPECT_EQ(mismatch, 0) << "llama.cpp's greedy choice differs from ember's at " << mismatch << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Gemma3ParityTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<GemmaCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
