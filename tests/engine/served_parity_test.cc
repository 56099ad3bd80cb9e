// Parity with llama.cpp (node-llama-cpp peer) in the configuration `ember serve` runs: F16 KV cache,
// 2 threads, the default prefill chunk, quantized weights of every type ember loads (Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) and F32/F16/BF16, head_dim 64 and 128, GQA 1-8, 1,088 positions. The peer
// runs with the same KV type, threads and flash attention off (ember's attention is the non-flash
// computation). Teacher-forced KL(llama.cpp ‖ ember) on 8 positions spread over the sequence (a
// probability row through the binding costs ~0.3 s at 128k vocabulary); mean KL <= 1e-4 for float
// weights, <= 1e-3 for quantized ones (all models here are shallow: 2 or 4 layers). Deep quantized models
// get an accuracy test instead (deep_accuracy_test.cc, docs/parity.md). All models go through ONE peer
// process, so this is one test. Fails (never skips) when node or the peer is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "parity_util.h"

namespace ember {
namespace {

struct ServedCase {
  const char* name;
  const char* gen_args;  // shape and type; the K-quant files keep the tied 128k-row embedding in q8_0
  double max_mean_kl;
};

constexpr double kFloat = 1e-4, kQuant = 1e-3;
constexpr int kTokens = 1088, kRows = 8;

// Shapes (llama3 tokenizer; n_embd 256 so K-quants apply; --head-dim widens q/k/v past n_embd):
#define HD64_GQA1 "--arch llama --n-embd 256 --n-head 4 --n-head-kv 4 --n-ff 512 "
#define HD64_GQA2 "--arch llama --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 512 "
#define HD64_GQA8 "--arch llama --n-embd 256 --n-head 8 --n-head-kv 1 --head-dim 64 --n-ff 512 "
#define HD128_GQA2 "--arch llama --n-embd 256 --n-head 4 --n-head-kv 2 --head-dim 128 --n-ff 512 "
#define HD128_GQA4 "--arch llama --n-embd 256 --n-head 4 --n-head-kv 1 --head-dim 128 --n-ff 512 "
#define QWEN35_HD128 "--arch qwen35 --tokenizer qwen3 --n-embd 256 --n-head 4 --n-head-kv 2 --head-dim 128 --n-ff 512 " \
  "--ssm-state 64 --ssm-groups 2 --ssm-heads 4 --untied "
#define QWEN3MOE_HD128 "--arch qwen3moe --tokenizer qwen3 --n-embd 256 --n-head 4 --n-head-kv 2 --head-dim 128 --n-ff 512 " \
  "--experts 16 --experts-used 4 --expert-ff 128 --untied "
#define QWEN3_HD128_GQA2 "--arch qwen3 --tokenizer qwen3 --n-embd 256 --n-head 4 --n-head-kv 2 --head-dim 128 --n-ff 512 --untied "

const std::vector<ServedCase>& Cases() {
  static const std::vector<ServedCase> cases = {
      {"f32_hd64_gqa1", HD64_GQA1 "--n-layer 2 --type f32 --seed 31", kFloat},
      {"f16_hd128_gqa4", HD128_GQA4 "--n-layer 4 --type f16 --seed 32", kFloat},
      {"bf16_hd64_gqa8", HD64_GQA8 "--n-layer 2 --type bf16 --seed 33", kFloat},
      {"q8_0_hd64_gqa8", HD64_GQA8 "--n-layer 2 --type q8_0 --seed 34", kQuant},
      {"q4_0_hd128_gqa2", HD128_GQA2 "--n-layer 2 --type q4_0 --seed 35", kQuant},
      {"q4_1_hd64_gqa2", HD64_GQA2 "--n-layer 2 --type q4_1 --type-embd q8_0 --seed 36", kQuant},
      {"q5_0_hd128_gqa4", HD128_GQA4 "--n-layer 2 --type q5_0 --seed 37", kQuant},
      {"q5_1_hd64_gqa1", HD64_GQA1 "--n-layer 2 --type q5_1 --type-embd q8_0 --seed 38", kQuant},
      {"q4_k_hd64_gqa2_l4", HD64_GQA2 "--n-layer 4 --type q4_k --type-embd q8_0 --seed 39", kQuant},
      {"q5_k_hd128_gqa2", HD128_GQA2 "--n-layer 2 --type q5_k --type-embd q8_0 --seed 40", kQuant},
      {"q6_k_hd64_gqa8_l4", HD64_GQA8 "--n-layer 4 --type q6_k --type-embd q8_0 --seed 41", kQuant},
      {"qwen3_q8_0_hd128_gqa2", QWEN3_HD128_GQA2 "--n-layer 2 --type q8_0 --seed 42", kQuant},
      // qwen35 hybrid (issue #31): three gated-delta-net layers and one attention layer.
      {"qwen35_q8_0_hd128", QWEN35_HD128 "--n-layer 4 --type q8_0 --seed 43", kQuant},
      // qwen3moe (issue #32): 16 experts, 4 per token.
      {"qwen3moe_q8_0_hd128", QWEN3MOE_HD128 "--n-layer 2 --type q8_0 --seed 44", kQuant},
      // The low-bit types MoE files ship (issue #32): each on a dense shape, and MXFP4 experts as gpt-oss has.
      {"q2_k_hd64_gqa2", HD64_GQA2 "--n-layer 2 --type q2_k --type-embd q8_0 --seed 45", kQuant},
      {"q3_k_hd128_gqa4", HD128_GQA4 "--n-layer 2 --type q3_k --type-embd q8_0 --seed 46", kQuant},
      {"iq4_nl_hd64_gqa8", HD64_GQA8 "--n-layer 2 --type iq4_nl --type-embd q8_0 --seed 47", kQuant},
      {"iq4_xs_hd128_gqa2", HD128_GQA2 "--n-layer 2 --type iq4_xs --type-embd q8_0 --seed 48", kQuant},
      {"qwen3moe_mxfp4_hd128", QWEN3MOE_HD128 "--n-layer 2 --type mxfp4 --type-embd q8_0 --seed 49", kQuant},
  };
  return cases;
}

// EMBER_PARITY_SWEEP=1 (scripts/parity-sweep): every weight type again on one more shape (head_dim 128,
// GQA 4, 4 layers), 16 rows.
bool Sweep() {
  const char* s = std::getenv("EMBER_PARITY_SWEEP");
  return s != nullptr && std::string(s) == "1";
}

std::vector<ServedCase> SweepCases() {
  static std::vector<std::string> args;  // owns the strings the cases point into
  static std::vector<std::string> names;
  static std::vector<ServedCase> cases;
  if (!cases.empty()) return cases;
  const std::vector<std::pair<std::string, std::string>> shapes = {{"hd128_gqa4_l4", HD128_GQA4 "--n-layer 4"}};
  for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"}) {
    const std::string type = t;
    const bool fl = type == "f32" || type == "f16" || type == "bf16";
    const bool small_embd = fl || type == "q8_0" || type == "q4_0" || type == "q5_0";
    for (const auto& [shape_name, shape] : shapes) {
      names.push_back(type + "_" + shape_name);
      args.push_back(shape + " --type " + type + (small_embd ? "" : " --type-embd q8_0") + " --seed " +
                     std::to_string(60 + args.size()));
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const bool fl = names[i].rfind("f", 0) == 0 || names[i].rfind("bf", 0) == 0;
    cases.push_back({names[i].c_str(), args[i].c_str(), fl ? kFloat : kQuant});
  }
  return cases;
}

TEST(ServedParityTest, EveryWeightTypeMatchesLlamaCppWithF16KvAndTwoThreads) {
  const std::string dir = testutil::MakeTempDir("served-parity");
  const std::vector<ServedCase> cases = Sweep() ? SweepCases() : Cases();
  const std::vector<int32_t> rows = testutil::SpreadRows(kTokens, Sweep() ? 16 : kRows);
  std::vector<testutil::OracleJob> jobs;
  std::vector<std::vector<float>> ours;
  std::vector<int64_t> n_vocab;
  using Clock = std::chrono::steady_clock;
  const auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  double gen_s = 0, ember_s = 0;
  for (const ServedCase& c : cases) {
    const auto t0 = Clock::now();
    const std::string model = testutil::GenModel(dir, c.name, c.gen_args);
    const auto t1 = Clock::now();
    gen_s += secs(t0, t1);
    EngineOptions eo;  // the server's defaults (F16 KV, 512-token prefill chunks) with 2 threads
    eo.threads = 2;
    eo.load_tokenizer = false;
    auto engine = Engine::Load(model, eo);
    ASSERT_TRUE(engine.ok()) << c.name << ": " << engine.status().ToString();
    ASSERT_EQ((*engine)->options().kv_dtype, KvDtype::kF16);
    const int64_t nv = (*engine)->model().config().n_vocab;
    std::vector<int32_t> tokens = testutil::RandomTokens(kTokens, nv, 1000 + static_cast<uint32_t>(jobs.size()));
    ours.push_back(testutil::EmberRows(**engine, tokens, rows));
    ember_s += secs(t1, Clock::now());
    n_vocab.push_back(nv);
    jobs.push_back({model, std::move(tokens), rows, "f16", 2});
  }
  const auto t2 = Clock::now();
  const testutil::OracleRows peer = testutil::RunOracle(dir, jobs);
  std::printf("[served parity] %zu models: gen-model %.1f s, ember %.1f s, llama.cpp peer %.1f s\n", jobs.size(), gen_s,
              ember_s, secs(t2, Clock::now()));
  ASSERT_EQ(peer.probs.size(), jobs.size());

  for (size_t i = 0; i < jobs.size(); ++i) {
    const ServedCase& c = cases[i];
    const int64_t nv = n_vocab[i];
    const nlohmann::json& m = peer.meta[i];
    ASSERT_EQ(m["n_vocab"].get<int64_t>(), nv) << c.name;
    // Like with like: the peer really ran the configuration asked for.
    EXPECT_EQ(m["kv"], "f16") << c.name;
    EXPECT_EQ(m["threads"], 2) << c.name;
    EXPECT_EQ(m["flash_attention"], false) << c.name;
    double sum = 0, mx = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const double kl = testutil::KlFromProbs(peer.probs[i].data() + r * nv, ours[i].data() + r * nv, nv);
      sum += kl;
      mx = std::max(mx, kl);
    }
    const double mean = sum / static_cast<double>(rows.size());
    std::printf("[served parity] %-24s KL mean %.3e  max %.3e  (limit %.0e)\n", c.name, mean, mx, c.max_mean_kl);
    EXPECT_LE(mean, c.max_mean_kl) << c.name;
  }
}

}  // namespace
}  // namespace ember
