// Shared by the gen-model tests: llama.cpp (the peer runner's check-models) loads a list of files.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ember::testing {

// `list` is a JSON array of {"path", "tokens", ...}: every model loads in llama.cpp and evaluating its
// tokens gives finite outputs whose probabilities sum to 1.
inline void ExpectPeerLoadsAll(const TempDir& dir, const nlohmann::json& list) {
  std::ofstream(dir.file("list.json")) << list.dump();
  auto r = RunCommand(PeerRunner() + " check-models - --list " + dir.file("list.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), list.size());
  for (const auto& res : j["results"]) {
    EXPECT_TRUE(res["loaded"].get<bool>()) << res.dump();
    if (!res["loaded"].get<bool>()) continue;
    EXPECT_TRUE(res["finite"].get<bool>()) << res.dump();
    EXPECT_NEAR(res["prob_sum"].get<double>(), 1.0, 1e-3) << res.dump();
  }
}

}  // namespace ember::testing
