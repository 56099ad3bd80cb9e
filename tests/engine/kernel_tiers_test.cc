// The kernel tiers compared at model level (src/kernels/README.md, "Kernel tiers"; docs/cache-spec.md §6):
// `ember logits` of one generated model, run under EMBER_KERNELS=scalar, =avx2 and with no ceiling (the
// best tier this CPU runs), must be bitwise identical across tiers, and within each tier bitwise the same
// whether the positions are computed one token per step (decode) or in prefill chunks, on 1 or 2 threads.
// The ceiling is read once per process, so every run is its own `ember logits` process. A tier this CPU
// lacks fails the test with the reason: scalar always exists, and ember's builds need AVX2.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "support/test_support.h"

namespace ember {
namespace {

// The best tier this CPU runs, by the same feature sets the dispatch requires (matmul_test.cc checks the
// dispatch against this independently).
bool CpuHasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
bool CpuHasAvx512() {
  return CpuHasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

struct Tier {
  const char* name;
  std::string env;  // the command's environment prefix
};

// scalar and avx2 by ceiling; the best by clearing any ceiling the caller's environment sets.
std::vector<Tier> Tiers() {
  return {{"scalar", "EMBER_KERNELS=scalar"}, {"avx2", "EMBER_KERNELS=avx2"},
          {CpuHasAvx512() ? "best (avx512)" : "best (avx2: this CPU has no AVX-512 F/BW/VL/VNNI)", "env -u EMBER_KERNELS"}};
}

// One chunking of the evaluation: tokens per forward call and threads.
struct Chunking {
  int ubatch;
  int threads;
};
constexpr Chunking kDecode{1, 1};  // the reference: one position per call
constexpr Chunking kChunkings[] = {{64, 2}, {7, 2}};

// The logits file of one run (n_tokens x n_vocab float32), empty (with a test failure) if it failed.
std::string Logits(const std::string& dir, const std::string& model, const std::string& tokens, const Tier& tier,
                   Chunking c) {
  const std::string out = dir + "/logits.bin";
  const std::string cmd = tier.env + " " + testutil::EmberBinary() + " logits " + model + " --tokens " + tokens +
                          " --ubatch " + std::to_string(c.ubatch) + " --threads " + std::to_string(c.threads) +
                          " --out " + out + " 2>&1";
  const testutil::CommandResult r = testutil::RunCommand(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out;
  std::string bytes = ember::testing::ReadFileToString(out);
  std::filesystem::remove(out);  // up to ~20 MB a run: never more than one on disk
  EXPECT_FALSE(bytes.empty()) << cmd;
  return bytes;
}

// The first position whose row differs (for the message), or -1.
int64_t FirstDifferentRow(const std::string& a, const std::string& b, int64_t n_tokens) {
  if (a.size() != b.size() || a.empty()) return 0;
  const size_t row = a.size() / static_cast<size_t>(n_tokens);
  for (int64_t i = 0; i < n_tokens; ++i) {
    if (a.compare(static_cast<size_t>(i) * row, row, b, static_cast<size_t>(i) * row, row) != 0) return i;
  }
  return -1;
}

struct ModelCase {
  const char* name;
  const char* gen_args;
};

class KernelTiersTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(KernelTiersTest, LogitsBitwiseAcrossTiersAndChunkings) {
  ASSERT_TRUE(CpuHasAvx2()) << "this CPU lacks AVX2+FMA+F16C: the avx2 tier cannot run, so it cannot be compared";
  const std::string dir = testutil::MakeTempDir("tiers");
  const std::string model = testutil::GenModel(dir, "m", GetParam().gen_args);
  constexpr int64_t kTokens = 32;
  std::mt19937 rng(29);
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < kTokens; ++i) ids.push_back(static_cast<int32_t>(rng() % 4000));
  const std::string tokens = testutil::JoinIds(ids);

  std::string scalar_ref;
  for (const Tier& tier : Tiers()) {
    const std::string ref = Logits(dir, model, tokens, tier, kDecode);
    ASSERT_FALSE(ref.empty()) << tier.name;
    ASSERT_EQ(ref.size() % (kTokens * sizeof(float)), 0u);
    for (const Chunking& c : kChunkings) {
      const std::string got = Logits(dir, model, tokens, tier, c);
      EXPECT_EQ(FirstDifferentRow(got, ref, kTokens), -1)
          << "tier " << tier.name << ": ubatch " << c.ubatch << " on " << c.threads
          << " threads differs from one position per step at this row (batch invariance)";
    }
    if (scalar_ref.empty()) {
      scalar_ref = ref;
    } else {
      EXPECT_EQ(FirstDifferentRow(ref, scalar_ref, kTokens), -1)
          << "tier " << tier.name << " differs from the scalar tier at this row";
    }
  }
}

// n_embd 256 so that the K-quants (256-element super-blocks) fit; each type takes every kernel family
// its tiers have: Q8_0 the AVX-512 row kernels, VNNI and packed GEMM; Q4_K the AVX2 row kernel under
// every ceiling above scalar plus the packed GEMM; F16 the float kernels. 2 layers, random weights.
INSTANTIATE_TEST_SUITE_P(
    Models, KernelTiersTest,
    ::testing::Values(
        ModelCase{"llama_q8_0", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 512 --type q8_0 --seed 21"},
        ModelCase{"llama_q4_k", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 1 --n-ff 512 --type q4_k --seed 22"},
        ModelCase{"qwen3_f16", "--arch qwen3 --tokenizer qwen3 --n-layer 2 --n-embd 128 --n-head 4 --n-head-kv 2 --n-ff 256 --type f16 --seed 23"}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
