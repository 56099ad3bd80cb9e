// Repacked weights (EngineOptions::repack_weights, Model::PackWeights) change nothing but speed: an
// engine loaded with them gives bitwise the logits of one loaded without, for prefill chunks of any
// size and decode steps, on every type with a packed layout (and a Q6_K untied output), and what was
// packed is exactly what this CPU has packed kernels for.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <span>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul.h"

namespace ember {
namespace {

struct RepackCase {
  const char* name;
  const char* gen_args;
  int packable;  // matrices with a packed layout and >= 16 rows (2 layers x 7, + an untied output)
};

class RepackTest : public ::testing::TestWithParam<RepackCase> {};

std::unique_ptr<Engine> Load(const std::string& model, bool repack) {
  EngineOptions eo;
  eo.threads = 2;
  eo.load_tokenizer = false;
  eo.ubatch = 48;
  eo.repack_weights = repack;
  auto e = Engine::Load(model, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// All positions' logits of `tokens`, forwarded in the given chunks (a chunk of 1 is a decode step).
std::vector<float> Logits(Engine& e, const std::vector<int32_t>& tokens, const std::vector<int64_t>& chunks) {
  auto seq = e.NewSequence(/*all_logits=*/true);
  EXPECT_TRUE(seq.ok());
  std::vector<float> all, rows;
  size_t at = 0;
  for (int64_t len : chunks) {
    rows.clear();
    EXPECT_TRUE(e.Evaluate(**seq, std::span<const int32_t>(tokens.data() + at, static_cast<size_t>(len)), len, &rows).ok());
    all.insert(all.end(), rows.begin(), rows.end());
    at += static_cast<size_t>(len);
  }
  return all;
}

TEST_P(RepackTest, SameLogitsWithAndWithoutRepacking) {
  const std::string dir = testutil::MakeTempDir("repack");
  const std::string model = testutil::GenModel(dir, "m", GetParam().gen_args);
  std::unique_ptr<Engine> packed = Load(model, true), plain = Load(model, false);
  ASSERT_TRUE(packed && plain);
  EXPECT_EQ(plain->model().packed().tensors(), 0);
  // Packed exactly where this CPU has the kernels (AVX-512 VNNI); elsewhere the option is a no-op.
  const GgmlType t = packed->model().layers()[0].wq.type;
  const int want = kernels::PackedKernelAvailable(t) ? GetParam().packable : 0;
  EXPECT_EQ(packed->model().packed().tensors(), want);
  EXPECT_EQ(packed->model().packed().bytes() > 0, want > 0);
  EXPECT_EQ(packed->model().layers()[0].w_down.packed != nullptr, want > 0);
  if (kernels::CpuHasAvx512()) {
    EXPECT_GT(want, 0) << "this CPU has AVX-512 VNNI: the case must exercise packing";
  }
  // The packed matrices' rows are read once (to pack) and get no 2 MiB placement: the placement covers
  // the rest of the same bytes the plain engine places.
  EXPECT_EQ(packed->weight_pages().read_once, packed->model().packed().bytes());
  EXPECT_EQ(plain->weight_pages().read_once, 0u);
  EXPECT_EQ(packed->weight_pages().bytes + packed->weight_pages().read_once, plain->weight_pages().bytes);

  const int64_t nv = packed->model().config().n_vocab;
  std::mt19937 rng(5);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 70; ++i) tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
  const std::vector<int64_t> chunks = {33, 1, 17, 1, 1, 16, 1};  // prefill tiles, tails, decode steps
  const std::vector<float> a = Logits(*packed, tokens, chunks), b = Logits(*plain, tokens, chunks);
  ASSERT_EQ(a.size(), static_cast<size_t>(70 * nv));
  ASSERT_EQ(a.size(), b.size());
  size_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += std::memcmp(&a[i], &b[i], 4) != 0;
  EXPECT_EQ(diff, 0u) << "logits that differ between the repacked and the plain engine";
}

// n_embd 128 / n_ff 160 / q 128 / kv 64: every matrix has whole 16-row groups, and n_ff is no multiple of
// 32 rows; K-quant rows need n_in % 256 == 0, hence 256-wide models for them.
INSTANTIATE_TEST_SUITE_P(
    Types, RepackTest,
    ::testing::Values(
        RepackCase{"q8_0", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 4 --n-head-kv 2 --n-ff 160 "
                   "--type q8_0 --seed 3", 14},
        RepackCase{"q4_0_untied_q8_0", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 128 --n-head 4 --n-head-kv 2 "
                   "--n-ff 160 --type q4_0 --untied --type-output q8_0 --seed 4", 15},
        RepackCase{"q4_k_q6_k", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 "
                   "--type q4_k --type-embd q6_k --untied --type-output q6_k --seed 5", 15},
        RepackCase{"q5_k_untied_q5_k", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 2 "
                   "--n-ff 256 --type q5_k --type-embd q6_k --untied --type-output q5_k --seed 7", 15},
        RepackCase{"qwen3_q6_k", "--arch qwen3 --tokenizer qwen3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 1 --n-ff 512 "
                   "--type q6_k --seed 6", 14}),
    [](const ::testing::TestParamInfo<RepackCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
