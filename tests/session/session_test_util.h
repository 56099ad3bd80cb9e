// Shared pieces of the CachedSession fixtures: a generated model loaded once per suite, deterministic
// token ids and greedy requests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "session/cached_session.h"
#include "engine/engine.h"

namespace ember::session_test {

// `ember gen-model --out MODEL gen_args`, then Engine::Load with 2 threads, ubatch 64, 2048 positions.
// Fails the calling test and returns null on any error.
inline Engine* GenerateAndLoad(const std::string& model, const std::string& gen_args, KvDtype kv,
                               bool load_tokenizer) {
  const std::string cmd =
      std::string(EMBER_BINARY_DIR) + "/ember gen-model --out '" + model + "' " + gen_args + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EngineOptions eo;
  eo.threads = 2;
  eo.ubatch = 64;
  eo.n_ctx = 2048;
  eo.kv_dtype = kv;
  eo.load_tokenizer = load_tokenizer;
  auto e = Engine::Load(model, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value().release() : nullptr;
}

// n deterministic ids in [first, first + range).
inline std::vector<int32_t> PseudoIds(size_t n, uint32_t seed, int32_t first, uint32_t range) {
  std::vector<int32_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& t : v) {
    x = x * 1664525u + 1013904223u;
    t = first + static_cast<int32_t>(x % range);
  }
  return v;
}

inline std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Greedy, no stop at end-of-generation, so every run generates exactly max_tokens.
inline SessionRequest GreedyRequest(std::vector<int32_t> prompt, int max_tokens, std::string ns = "") {
  SessionRequest r;
  r.prompt = std::move(prompt);
  r.ns = std::move(ns);
  r.generate.max_tokens = max_tokens;
  r.generate.sampling.temperature = 0;
  r.generate.stop_at_eog = false;
  return r;
}

// The first token's distribution after the whole prompt, through the session (lookup, restore, the
// prompt-boundary snapshot, then the step loop): the sampled token and the top-20 alternatives with
// their log-probabilities, as floats, so that two runs compare bitwise. Sets *r.
inline std::vector<float> FirstTokenDistribution(CachedSession& s, SessionRequest req, SessionResult* r) {
  req.generate.max_tokens = 1;
  req.generate.top_logprobs = kMaxTopLogprobs;
  auto out = s.Generate(req, nullptr);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok() || out->gen.logprobs.size() != 1) return {};
  *r = *out;
  const TokenLogprobs& lp = out->gen.logprobs[0];
  std::vector<float> v{static_cast<float>(lp.token), lp.logprob};
  for (const auto& t : lp.top) {
    v.push_back(static_cast<float>(t.token));
    v.push_back(t.logprob);
  }
  return v;
}

}  // namespace ember::session_test
