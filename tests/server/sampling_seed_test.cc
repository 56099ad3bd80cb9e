// The sampler seed: the client's seed is kept; seedless requests each get a different one, even when
// many arrive at once (no clock reading, so no two in one tick alike).
#include "server/sampling_seed.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ember::server {
namespace {

TEST(SamplingSeed, AGivenSeedIsKept) {
  EXPECT_EQ(SeedFor(uint64_t{0}), 0u);
  EXPECT_EQ(SeedFor(uint64_t{42}), 42u);
}

TEST(SamplingSeed, SeedlessRequestsNeverShareASeedEvenConcurrently) {
  std::set<uint64_t> seen;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&] {
      std::vector<uint64_t> mine;
      for (int i = 0; i < 5000; ++i) mine.push_back(SeedFor(std::nullopt));
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(mine.begin(), mine.end());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(seen.size(), 8u * 5000u);
}

}  // namespace
}  // namespace ember::server
