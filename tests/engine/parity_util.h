// Helpers of the served-configuration parity tests (served_parity_test.cc, deep_accuracy_test.cc): ember's
// logits at a few sampled positions of a long sequence, and the llama.cpp oracle's rows for many models
// from ONE peer process (loading node-llama-cpp costs seconds; each tiny model little).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ember::testutil {

inline std::vector<int32_t> RandomTokens(int n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab)));
  return t;
}

// `count` ascending positions spread over [0, n): the first early, the rest evenly to the last one, so
// most rows see hundreds of keys (a probability row through the binding costs ~0.3 s at 128k vocab).
inline std::vector<int32_t> SpreadRows(int n, int count) {
  std::vector<int32_t> rows = {7};
  for (int i = 1; i < count; ++i) rows.push_back(static_cast<int32_t>(static_cast<int64_t>(n) * i / (count - 1) - 1));
  rows.back() = n - 1;
  return rows;
}

// ember's logits at `rows` (ascending) of teacher-forced `tokens`, as the server computes them: Prefill in
// the engine's default chunks, logits of the last position only (no all-logits sequence).
inline std::vector<float> EmberRows(Engine& e, const std::vector<int32_t>& tokens, const std::vector<int32_t>& rows) {
  const int64_t nv = e.model().config().n_vocab;
  std::vector<float> out(rows.size() * static_cast<size_t>(nv));
  auto seq = e.NewSequence();
  EXPECT_TRUE(seq.ok()) << seq.status().ToString();
  if (!seq.ok()) return out;
  int32_t at = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    auto logits = e.Prefill(**seq, std::span<const int32_t>(tokens.data() + at, static_cast<size_t>(rows[r] + 1 - at)));
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    if (!logits.ok()) return out;
    std::memcpy(out.data() + r * nv, *logits, static_cast<size_t>(nv) * sizeof(float));
    at = rows[r] + 1;
  }
  return out;
}

struct OracleJob {
  std::string model;
  std::vector<int32_t> tokens;
  std::vector<int32_t> rows;
  std::string kv = "f16";
  int threads = 2;
};

struct OracleRows {
  std::vector<std::vector<float>> probs;  // per job: rows x n_vocab probabilities
  nlohmann::json meta;                   // per job: the peer's answer (n_vocab, kv, threads, ...)
};

// Runs every job through one `runner.mjs rows-batch` process. Fails the test (never skips) when the
// peer cannot run.
inline OracleRows RunOracle(const std::string& dir, const std::vector<OracleJob>& jobs) {
  OracleRows out;
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string tok = dir + "/tokens" + std::to_string(i) + ".txt";
    std::ofstream(tok) << JoinIds(jobs[i].tokens);
    list.push_back({{"model", jobs[i].model}, {"tokens_file", tok}, {"rows", jobs[i].rows},
                    {"out", dir + "/peer" + std::to_string(i) + ".f32"}, {"kv", jobs[i].kv}, {"threads", jobs[i].threads}});
  }
  std::ofstream(dir + "/jobs.json") << list.dump();
  const CommandResult r = RunCommand("node " + PeerRunner() + " rows-batch - --jobs " + dir + "/jobs.json");
  EXPECT_EQ(r.exit_code, 0) << "the llama.cpp peer failed (node or peers/llamacpp missing?): " << r.out;
  if (r.exit_code != 0) return out;
  const nlohmann::json res = nlohmann::json::parse(r.out);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const nlohmann::json& m = res["results"][i];
    const size_t n = jobs[i].rows.size() * m["n_vocab"].get<size_t>();
    std::vector<float> p(n);
    std::ifstream f(list[i]["out"].get<std::string>(), std::ios::binary);
    f.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(n * sizeof(float)));
    EXPECT_TRUE(f.good()) << "short peer output for " << jobs[i].model;
    out.probs.push_back(std::move(p));
    out.meta.push_back(m);
  }
  return out;
}

// KL(softmax(ref) ‖ softmax(logits)) with ref float64 logits (the numpy reference's rows).
inline double KlFromRefLogits(const double* ref, const float* logits, int64_t n) {
  double mr = -INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    mr = std::max(mr, ref[i]);
    mx = std::max(mx, static_cast<double>(logits[i]));
  }
  double zr = 0, zx = 0;
  for (int64_t i = 0; i < n; ++i) {
    zr += std::exp(ref[i] - mr);
    zx += std::exp(logits[i] - mx);
  }
  const double lzr = std::log(zr) + mr, lzx = std::log(zx) + mx;
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double lp = ref[i] - lzr;
    kl += std::exp(lp) * (lp - (logits[i] - lzx));
  }
  return kl;
}

// The same with the other side as probabilities (the peer's rows; zeros count as -inf log-probs, which
// only a reference that gives them mass would notice).
inline double KlFromRefProbs(const double* ref, const float* probs, int64_t n) {
  double mr = -INFINITY, psum = 0;
  for (int64_t i = 0; i < n; ++i) {
    mr = std::max(mr, ref[i]);
    psum += probs[i];
  }
  double zr = 0;
  for (int64_t i = 0; i < n; ++i) zr += std::exp(ref[i] - mr);
  const double lzr = std::log(zr) + mr;
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double lp = ref[i] - lzr;
    const double q = std::max(static_cast<double>(probs[i]) / psum, 1e-300);
    kl += std::exp(lp) * (lp - std::log(q));
  }
  return kl;
}

}  // namespace ember::testutil
