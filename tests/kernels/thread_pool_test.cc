#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ember::kernels {
namespace {

TEST(ThreadPoolTest, EveryIndexExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 3, 4, 7, 100, 1001}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

// Dynamic chunks: every index once, every call one whole chunk [k*chunk, min(n, (k+1)*chunk)), the
// thread index in range; after mixing with static calls (shared job state) and for any chunk size.
TEST(ThreadPoolTest, ChunksCoverEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 100, 1001}) {
      for (int64_t chunk : {0, 1, 3, 16, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> bad{0};
        pool.ParallelForChunks(n, chunk, [&](int64_t b, int64_t e, int t) {
          const int64_t c = std::max<int64_t>(1, chunk);
          if (b % c != 0 || e != std::min(n, b + c) || t < 0 || t >= threads) bad++;
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        ASSERT_EQ(bad.load(), 0) << "threads=" << threads << " n=" << n << " chunk=" << chunk;
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " chunk=" << chunk << " i=" << i;
        std::atomic<int64_t> total{0};
        pool.ParallelFor(n, [&](int64_t b, int64_t e, int) { total += e - b; });
        ASSERT_EQ(total.load(), n);
      }
    }
  }
}

// Guided chunks: every index once, chunks start at multiples of the granule, sizes never grow and
// end at one granule (or the remainder) once the work runs out.
TEST(ThreadPoolTest, GuidedChunksCoverEveryIndexOnceAndShrink) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 100, 1001, 4096}) {
      for (int64_t granule : {0, 1, 16, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        std::atomic<int> bad{0};
        pool.ParallelForGuided(n, granule, [&](int64_t b, int64_t e, int t) {
          if (b >= e || t < 0 || t >= threads) bad++;
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
          std::lock_guard<std::mutex> lk(mu);
          chunks.emplace_back(b, e);
        });
        ASSERT_EQ(bad.load(), 0);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " granule=" << granule;
        std::sort(chunks.begin(), chunks.end());
        const int64_t g = std::max<int64_t>(1, granule);
        for (size_t k = 0; k < chunks.size(); ++k) {
          ASSERT_EQ(chunks[k].first % g, 0) << "n=" << n << " granule=" << granule;
          if (k + 1 < chunks.size() && k > 0) {
            ASSERT_LE(chunks[k + 1].second - chunks[k + 1].first, chunks[k].second - chunks[k].first)
                << "a later chunk is larger: n=" << n << " granule=" << granule;
          }
        }
        if (threads > 1 && n >= 4 * g * threads) {
          ASSERT_GT(chunks.size(), 2u);
          const int64_t cap = std::max<int64_t>(n / (8 * threads), 1);
          ASSERT_LE(chunks.front().second - chunks.front().first, (cap + g - 1) / g * g) << "capped at 1/8 of a share";
          ASSERT_LE(chunks.back().second - chunks.back().first, g);
          ASSERT_LT(chunks.size(), static_cast<size_t>(n / g)) << "guided claims should be fewer than granules";
        }
      }
    }
  }
}

// With one worker stalled, the others take the remaining chunks (a static split would wait for it).
TEST(ThreadPoolTest, ChunksFlowAroundAStalledThread) {
  ThreadPool pool(2);
  std::atomic<int64_t> by_thread[2] = {0, 0};
  pool.ParallelForChunks(64, 1, [&](int64_t b, int64_t e, int t) {
    if (t == 1 && by_thread[1].load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    by_thread[t] += e - b;
  });
  EXPECT_EQ(by_thread[0].load() + by_thread[1].load(), 64);
  EXPECT_GT(by_thread[0].load(), 32);  // more than a static half: thread 1 slept through its first chunk
}

TEST(ThreadPoolTest, FewerItemsThanThreads) {
  ThreadPool pool(4);
  std::atomic<int> calls{0}, items{0};
  pool.ParallelFor(2, [&](int64_t b, int64_t e, int) { calls++; items += static_cast<int>(e - b); });
  EXPECT_EQ(items.load(), 2);
  EXPECT_LE(calls.load(), 2);
  pool.ParallelFor(0, [&](int64_t, int64_t, int) { calls += 100; });
  EXPECT_LE(calls.load(), 2);
}

TEST(ThreadPoolTest, StaticPartitionIsDeterministic) {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<int> owner(10, -1);
    pool.ParallelFor(10, [&](int64_t b, int64_t e, int t) {
      for (int64_t i = b; i < e; ++i) owner[i] = t;
    });
    EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 2, 2, 2}));
  }
}

// Threads are created once: across many calls, only size() distinct OS threads ever run work.
TEST(ThreadPoolTest, ReusesThreads) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  for (int round = 0; round < 500; ++round) {
    pool.ParallelFor(3, [&](int64_t, int64_t, int) {
      std::lock_guard<std::mutex> lk(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()));  // the owner is thread 0
}

TEST(ThreadPoolTest, ThreadIndicesMatchPartition) {
  ThreadPool pool(2);
  std::vector<int> seen(2, 0);
  pool.ParallelFor(2, [&](int64_t b, int64_t, int t) { seen[t] = static_cast<int>(b) + 1; });
  EXPECT_EQ(seen[0], 1);
  EXPECT_EQ(seen[1], 2);
}

TEST(ThreadPoolTest, SurvivesIdleSleep) {
  // Workers fall back to the condition variable after spinning; a later call must still wake them.
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::atomic<int> n{0};
  pool.ParallelFor(2, [&](int64_t b, int64_t e, int) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n.load(), 2);
}

TEST(ThreadPoolTest, SizeClampedAndCoreCount) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  EXPECT_GE(PhysicalCoreCount(), 1);
  EXPECT_LE(PhysicalCoreCount(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace ember::kernels
