// Parity of the qwen35 hybrid forward pass (gated delta net + gated attention, model/delta_net.h) with
// llama.cpp (node-llama-cpp peer) over 640 positions: three delta-net layers then one attention layer,
// twice, with 4 v heads sharing 2 q/k heads (the head mapping), partial RoPE and the output gates.
// ember evaluates the sequence in chunks of uneven sizes (7, 64, 33, 1, ...) so the conv window and the
// recurrent state cross every kind of boundary; KL(llama.cpp ‖ ember) on 32 rows spread over the
// sequence, and greedy continuations: ember generates 32 tokens after a 608-token prompt and llama.cpp's
// argmax at every step must be ember's next token. Fails (never skips) when node or the peer is missing.
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

struct HybridCase {
  const char* name;
  const char* gen_args;
  const char* kv;
  double max_mean_kl;
  double max_kl;  // <= 0: not checked
  bool check_greedy;
};

constexpr int kPrompt = 608, kGen = 32, kTotal = kPrompt + kGen, kRows = 32;

constexpr const char* kShape =
    "--arch qwen35 --tokenizer qwen3 --n-layer 8 --n-embd 128 --n-head 4 --n-head-kv 2 --head-dim 32 --n-ff 256 "
    "--ssm-state 32 --ssm-groups 2 --ssm-heads 4 --ssm-conv 4 --full-attention-interval 4 --rope-dims 16 "
    "--ctx 4096 --untied";

const std::vector<HybridCase>& Cases() {
  static const std::vector<HybridCase> cases = {
      {"qwen35_f32_greedy", "--type f32 --output-std 2 --seed 31", "f32", 1e-4, 1e-3, true},
      // With an MTP block after the trunk (nextn_predict_layers 1): loaded by name, never run, on both sides.
      {"qwen35_f16_mtp", "--type f16 --output-std 2 --mtp-layers 1 --seed 32", "f16", 1e-4, 1e-3, false},
      {"qwen35_q8_0", "--type q8_0 --seed 33", "f32", 1e-3, 0, false},
  };
  return cases;
}

// Chunk sizes that cycle through odd lengths, a single token and full ubatches.
constexpr int kChunks[] = {7, 64, 33, 1, 50, 64, 2, 19};

class Qwen35ParityTest : public ::testing::TestWithParam<HybridCase> {};

TEST_P(Qwen35ParityTest, MatchesLlamaCppAcrossUnevenChunks) {
  const HybridCase& hc = GetParam();
  const std::string dir = testutil::MakeTempDir(hc.name);
  const std::string model = testutil::GenModel(dir, hc.name, std::string(kShape) + " " + hc.gen_args);
  EngineOptions eo;
  eo.threads = 2;
  eo.kv_dtype = std::string(hc.kv) == "f32" ? KvDtype::kF32 : KvDtype::kF16;
  eo.ubatch = 64;
  eo.load_tokenizer = false;
  auto engine = Engine::Load(model, eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;
  const int64_t nv = e.model().config().n_vocab;
  ASSERT_TRUE(e.model().config().is_recurrent(0) && !e.model().config().is_recurrent(3));
  ASSERT_EQ(e.kv_config().kinds[0].kind, StateKind::kRecurrent);

  std::mt19937 rng(37);
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
  tokens.insert(tokens.end(), gen->tokens.begin(), gen->tokens.end());

  std::vector<int32_t> rows;
  for (int i = 0; i < kRows; ++i) rows.push_back(i * (kTotal / kRows) + kTotal / kRows - 1);
  std::vector<float> ours(rows.size() * static_cast<size_t>(nv));
  {
    auto eval_seq = e.NewSequence(/*all_logits=*/true);
    ASSERT_TRUE(eval_seq.ok());
    std::vector<float> chunk;
    int64_t at = 0;
    for (size_t c = 0; at < kTotal; ++c) {
      const int64_t n = std::min<int64_t>(kChunks[c % std::size(kChunks)], kTotal - at);
      chunk.clear();
      ASSERT_TRUE(e.Evaluate(**eval_seq, std::span<const int32_t>(tokens.data() + at, static_cast<size_t>(n)), n, &chunk).ok());
      for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r] >= at && rows[r] < at + n) {
          std::memcpy(ours.data() + r * nv, chunk.data() + (rows[r] - at) * nv, static_cast<size_t>(nv) * 4);
        }
      }
      at += n;
    }
  }

  const std::string out = dir + "/peer.f32";
  const auto r = RunCommand("node " + testutil::PeerRunner() + " logits-rows " + model + " --tokens " + testutil::JoinIds(tokens) +
                            " --rows " + testutil::JoinIds(rows) + " --argmax-from " + std::to_string(kPrompt - 1) + " --out " +
                            out + " --kv " + hc.kv + " --threads 2");
  ASSERT_EQ(r.exit_code, 0) << "the llama.cpp peer failed (node missing?): " << r.out;
  const auto meta = nlohmann::json::parse(r.out);
  ASSERT_EQ(meta["n_vocab"].get<int64_t>(), nv);
  std::ifstream f(out, std::ios::binary);
  std::vector<float> peer(rows.size() * static_cast<size_t>(nv));
  f.read(reinterpret_cast<char*>(peer.data()), static_cast<std::streamsize>(peer.size() * 4));
  ASSERT_TRUE(f.good()) << "short peer output";

  double sum = 0, mx = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double kl = testutil::KlFromProbs(peer.data() + i * nv, ours.data() + i * nv, nv);
    sum += kl;
    mx = std::max(mx, kl);
  }
  const double mean = sum / static_cast<double>(rows.size());
  std::printf("[qwen35 parity] %-18s kv=%s  KL mean %.3e  max %.3e over %d rows\n", hc.name, hc.kv, mean, mx, kRows);
  EXPECT_LE(mean, hc.max_mean_kl);
  if (hc.max_kl > 0) {
    EXPECT_LE(mx, hc.max_kl);
  }
  if (hc.check_greedy) {
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

INSTANTIATE_TEST_SUITE_P(Models, Qwen35ParityTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<HybridCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
