// Accuracy, not closeness, on deep quantized models. Past a dozen layers ember and llama.cpp differ by more
// than the shallow tests' 1e-3: each computes the same quantized model with float32 sums in its own order,
// a sum that lands on the other side of an activation's Q8 rounding boundary flips that quant, and depth
// amplifies the flips. Neither is the exact answer, so both are compared with one: a float64 forward of
// the same quantized weights with ggml's activation rounding emulated (tests/support/ref_forward.py), and
// ember must be no farther from it than llama.cpp is: mean KL(ref ‖ ember) <= 1.1 x mean KL(ref ‖ llama.cpp)
// per weight type, over 3 seeds (docs/parity.md). Served configuration: F16 KV, 2 threads, on both sides.
// EMBER_PARITY_SWEEP=1 widens the matrix (scripts/parity-sweep). Fails (never skips) when node, the
// peer or python3-numpy is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "parity_util.h"

namespace ember {
namespace {

struct DeepCase {
  std::string type;
  std::string shape;
  int seeds;
};

bool Sweep() {
  const char* s = std::getenv("EMBER_PARITY_SWEEP");
  return s != nullptr && std::string(s) == "1";
}

constexpr const char* kDeep16 = "--arch llama --n-layer 16 --n-embd 256 --n-head 4 --n-head-kv 1 --n-ff 512";
constexpr const char* kDeep12Hd128 = "--arch llama --n-layer 12 --n-embd 256 --n-head 4 --n-head-kv 2 --head-dim 128 --n-ff 512";

std::vector<DeepCase> Cases() {
  if (!Sweep()) return {{"q8_0", kDeep16, 3}, {"q4_k", kDeep12Hd128, 3}};
  std::vector<DeepCase> all;
  // The two types of the plain test on the other shape, the other six on the 16-layer one.
  for (const char* t : {"q4_0", "q4_1", "q5_0", "q5_1", "q5_k", "q6_k"}) all.push_back({t, kDeep16, 3});
  all.push_back({"q8_0", kDeep12Hd128, 3});
  all.push_back({"q4_k", kDeep16, 3});
  return all;
}

std::string Python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

std::vector<double> ReadDoubles(const std::string& path, size_t n) {
  std::vector<double> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(double)));
  EXPECT_TRUE(f.good()) << "short reference output " << path;
  return v;
}

TEST(DeepAccuracyTest, EmberIsAsCloseAsLlamaCppToAFloat64ForwardOfTheQuantizedModel) {
  const std::string dir = testutil::MakeTempDir("deep-accuracy");
  const int n_tokens = 512, n_rows = Sweep() ? 24 : 32;
  const std::vector<int32_t> rows = testutil::SpreadRows(n_tokens, n_rows);
  struct Run {
    size_t case_index;
    int seed;
    std::vector<float> ours;
    std::vector<double> ref;
    int64_t nv;
  };
  std::vector<Run> runs;
  std::vector<testutil::OracleJob> jobs;
  using Clock = std::chrono::steady_clock;
  const auto secs = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
  const auto t0 = Clock::now();
  double gen_s = 0, ember_s = 0, ref_s = 0;
  const std::vector<DeepCase> cases = Cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    for (int s = 0; s < cases[ci].seeds; ++s) {
      const std::string name = cases[ci].type + "_" + std::to_string(ci) + "_" + std::to_string(s);
      std::string args = cases[ci].shape + " --type " + cases[ci].type + " --seed " + std::to_string(100 + s);
      if (cases[ci].type != "q8_0" && cases[ci].type != "q4_0" && cases[ci].type != "q5_0") args += " --type-embd q8_0";
      auto t = Clock::now();
      const std::string model = testutil::GenModel(dir, name, args);
      gen_s += secs(t);
      t = Clock::now();
      EngineOptions eo;
      eo.threads = 2;
      eo.load_tokenizer = false;
      auto engine = Engine::Load(model, eo);
      ASSERT_TRUE(engine.ok()) << name << ": " << engine.status().ToString();
      const int64_t nv = (*engine)->model().config().n_vocab;
      std::vector<int32_t> tokens = testutil::RandomTokens(n_tokens, nv, 500 + static_cast<uint32_t>(s));
      Run run{ci, s, testutil::EmberRows(**engine, tokens, rows), {}, nv};
      ember_s += secs(t);
      t = Clock::now();
      const std::string ref_out = dir + "/" + name + ".ref.f64";
      // One BLAS thread: the test runs beside others on two cores.
      const auto r = testutil::RunCommand("OPENBLAS_NUM_THREADS=1 " + Python() + " " + EMBER_SOURCE_DIR + "/tests/support/ref_forward.py " + model +
                                          " --tokens " + testutil::JoinIds(tokens) + " --rows " + testutil::JoinIds(rows) +
                                          " --out " + ref_out + " --kv f16");
      ASSERT_EQ(r.exit_code, 0) << "the float64 reference failed (python3-numpy missing? run scripts/setup): " << r.out;
      run.ref = ReadDoubles(ref_out, rows.size() * static_cast<size_t>(nv));
      ref_s += secs(t);
      runs.push_back(std::move(run));
      jobs.push_back({model, std::move(tokens), rows, "f16", 2});
    }
  }
  const auto t_peer = Clock::now();
  const testutil::OracleRows peer = testutil::RunOracle(dir, jobs);
  ASSERT_EQ(peer.probs.size(), jobs.size());
  std::printf("[deep accuracy] %zu models, %d positions, %d rows: %.1f s (gen-model %.1f, ember %.1f, float64 "
              "reference %.1f, llama.cpp peer %.1f)\n",
              jobs.size(), n_tokens, n_rows, secs(t0), gen_s, ember_s, ref_s, secs(t_peer));

  std::vector<double> ember_sum(cases.size()), llama_sum(cases.size()), mutual_sum(cases.size());
  std::vector<int> count(cases.size());
  for (size_t j = 0; j < runs.size(); ++j) {
    const Run& run = runs[j];
    const int64_t nv = run.nv;
    ASSERT_EQ(peer.meta[j]["n_vocab"].get<int64_t>(), nv);
    EXPECT_EQ(peer.meta[j]["kv"], "f16");
    EXPECT_EQ(peer.meta[j]["threads"], 2);
    double e = 0, l = 0, m = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const double* ref = run.ref.data() + r * nv;
      const float* p = peer.probs[j].data() + r * nv;
      e += testutil::KlFromRefLogits(ref, run.ours.data() + r * nv, nv);
      l += testutil::KlFromRefProbs(ref, p, nv);
      m += testutil::KlFromProbs(p, run.ours.data() + r * nv, nv);
    }
    const double n = static_cast<double>(rows.size());
    std::printf("[deep accuracy]   %-6s case %zu seed %d: KL(ref||ember) %.3e  KL(ref||llama.cpp) %.3e  KL(llama.cpp||ember) %.3e\n",
                cases[run.case_index].type.c_str(), run.case_index, run.seed, e / n, l / n, m / n);
    ember_sum[run.case_index] += e / n;
    llama_sum[run.case_index] += l / n;
    mutual_sum[run.case_index] += m / n;
    ++count[run.case_index];
  }
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const double e = ember_sum[ci] / count[ci], l = llama_sum[ci] / count[ci];
    std::printf("[deep accuracy] %-6s %s: mean over %d seeds KL(ref||ember) %.3e  KL(ref||llama.cpp) %.3e  ratio %.2f  "
                "KL(llama.cpp||ember) %.3e\n",
                cases[ci].type.c_str(), cases[ci].shape.c_str(), count[ci], e, l, e / l, mutual_sum[ci] / count[ci]);
    EXPECT_LE(e, 1.1 * l) << cases[ci].type << " " << cases[ci].shape
                          << ": ember is farther than llama.cpp from the float64 forward";
  }
}

}  // namespace
}  // namespace ember
