// The long-sequence parity run shared by the gemma3 and qwen35 suites: ember generates greedy tokens
// after a random prompt, evaluates the whole sequence teacher-forced in the given chunk sizes, and the
// llama.cpp peer (node-llama-cpp) returns its probability rows at `rows` and its argmax from the prompt's
// last position on; the result holds the per-row KL(llama.cpp ‖ ember) and the greedy mismatches.
// Failures are test failures (a missing peer fails, never skips).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ember::testutil {

// One model of a long-parity suite: gen-model flags, the KV type on both sides, the KL bounds.
struct LongParityCase {
  const char* name;
  const char* gen_args;
  const char* kv;          // "f32" | "f16"
  double max_mean_kl;
  double max_kl;           // <= 0: not checked
  bool check_greedy;
};

// The engine the suites compare: 2 threads, ubatch 64, the case's KV type, no tokenizer.
inline StatusOr<std::unique_ptr<Engine>> LoadParityEngine(const std::string& model, const LongParityCase& c) {
  EngineOptions eo;
  eo.threads = 2;
  eo.kv_dtype = std::string(c.kv) == "f32" ? KvDtype::kF32 : KvDtype::kF16;
  eo.ubatch = 64;
  eo.load_tokenizer = false;
  return Engine::Load(model, eo);
}

// `count` rows evenly over [0, total): the last position of each of count equal stretches.
inline std::vector<int32_t> EvenRows(int total, int count) {
  std::vector<int32_t> rows;
  for (int i = 0; i < count; ++i) rows.push_back(i * (total / count) + total / count - 1);
  return rows;
}

struct LongParitySpec {
  int prompt = 608;                // random prompt ids
  int gen = 32;                    // greedy tokens ember generates after them
  std::vector<int32_t> rows;       // positions compared (ascending, < prompt + gen)
  std::vector<int64_t> chunks;     // evaluation chunk sizes, cycled
  uint32_t seed = 17;
  std::string kv = "f32";          // the peer's KV type (ember's is the engine's)
};

struct LongParityResult {
  std::vector<int32_t> tokens;     // prompt + generated
  std::vector<double> kl;          // per compared row
  int greedy_mismatch = -1;        // steps where llama.cpp's argmax is not ember's next token
  double mean() const {
    double s = 0;
    for (double k : kl) s += k;
    return kl.empty() ? 0 : s / static_cast<double>(kl.size());
  }
  double max() const {
    double m = 0;
    for (double k : kl) m = std::max(m, k);
    return m;
  }
};

// ember's logits at spec.rows of `tokens`, evaluated on a fresh all-logits sequence in spec.chunks.
inline std::vector<float> EvalRowsChunked(Engine& e, const std::vector<int32_t>& tokens, const LongParitySpec& spec) {
  const int64_t nv = e.model().config().n_vocab;
  std::vector<float> ours(spec.rows.size() * static_cast<size_t>(nv));
  auto seq = e.NewSequence(/*all_logits=*/true);
  EXPECT_TRUE(seq.ok());
  if (!seq.ok()) return ours;
  std::vector<float> chunk;
  const int64_t total = static_cast<int64_t>(tokens.size());
  int64_t at = 0;
  for (size_t c = 0; at < total; ++c) {
    const int64_t n = std::min<int64_t>(spec.chunks[c % spec.chunks.size()], total - at);
    chunk.clear();
    const Status st = e.Evaluate(**seq, std::span<const int32_t>(tokens.data() + at, static_cast<size_t>(n)), n, &chunk);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return ours;
    for (size_t r = 0; r < spec.rows.size(); ++r) {
      if (spec.rows[r] >= at && spec.rows[r] < at + n) {
        std::memcpy(ours.data() + r * nv, chunk.data() + (spec.rows[r] - at) * nv, static_cast<size_t>(nv) * 4);
      }
    }
    at += n;
  }
  return ours;
}

inline LongParityResult RunLongParity(Engine& e, const std::string& model, const std::string& dir,
                                      const LongParitySpec& spec) {
  LongParityResult out;
  const int64_t nv = e.model().config().n_vocab;
  std::mt19937 rng(spec.seed);
  for (int i = 0; i < spec.prompt; ++i) out.tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
  auto seq = e.NewSequence();
  EXPECT_TRUE(seq.ok());
  if (!seq.ok()) return out;
  GenerateOptions go;
  go.max_tokens = spec.gen;
  go.sampling.temperature = 0;
  go.stop_at_eog = false;
  auto gen = e.Generate(**seq, out.tokens, go, nullptr);
  EXPECT_TRUE(gen.ok()) << gen.status().ToString();
  if (!gen.ok()) return out;
  EXPECT_EQ(gen->tokens.size(), static_cast<size_t>(spec.gen));
  out.tokens.insert(out.tokens.end(), gen->tokens.begin(), gen->tokens.end());
  const std::vector<float> ours = EvalRowsChunked(e, out.tokens, spec);

  const std::string file = dir + "/peer.f32";
  const auto r = RunCommand("node " + PeerRunner() + " logits-rows " + model + " --tokens " + JoinIds(out.tokens) +
                            " --rows " + JoinIds(spec.rows) + " --argmax-from " + std::to_string(spec.prompt - 1) +
                            " --out " + file + " --kv " + spec.kv + " --threads 2");
  EXPECT_EQ(r.exit_code, 0) << "the llama.cpp peer failed (node missing?): " << r.out;
  if (r.exit_code != 0) return out;
  const auto meta = nlohmann::json::parse(r.out);
  EXPECT_EQ(meta["n_vocab"].get<int64_t>(), nv);
  std::ifstream f(file, std::ios::binary);
  std::vector<float> peer(spec.rows.size() * static_cast<size_t>(nv));
  f.read(reinterpret_cast<char*>(peer.data()), static_cast<std::streamsize>(peer.size() * 4));
  EXPECT_TRUE(f.good()) << "short peer output";
  if (!f.good()) return out;
  for (size_t i = 0; i < spec.rows.size(); ++i) out.kl.push_back(KlFromProbs(peer.data() + i * nv, ours.data() + i * nv, nv));
  const auto& argmax = meta["argmax"];
  EXPECT_EQ(argmax.size(), static_cast<size_t>(spec.gen + 1));
  out.greedy_mismatch = 0;
  const int64_t total = static_cast<int64_t>(out.tokens.size());
  for (const auto& a : argmax) {
    const int64_t pos = a[0].get<int64_t>();
    if (pos + 1 < total && a[1].get<int32_t>() != out.tokens[static_cast<size_t>(pos + 1)]) ++out.greedy_mismatch;
  }
  return out;
}

}  // namespace ember::testutil
