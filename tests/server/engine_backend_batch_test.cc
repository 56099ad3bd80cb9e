// The real engine backend with continuous batching (--parallel N > 1): concurrent Generate calls give
// the serial backend's tokens, the batch and per-lane stats, memory admission through the KV budget
// (CheckAdmissible, the runner's queue, the reservation counting only what the cache did not supply),
// and the flags' validation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/engine_backend.h"
#include "support/poll.h"
#include "support/test_support.h"
#include "tiny_model.h"

namespace ember::server {
namespace {

class EngineBackendBatchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("m.gguf"));
  }
  static void TearDownTestSuite() { delete dir_; }

  static ServeOptions Options(int parallel, std::string kv_budget = "64M") {
    ServeOptions o;
    o.model_path = dir_->file("m.gguf");
    o.prompt_cache_bytes = "16M";
    o.threads = 2;
    o.parallel = parallel;
    o.step_tokens = 32;
    o.kv_budget = std::move(kv_budget);
    return o;
  }
  static std::unique_ptr<InferenceBackend> Backend(const ServeOptions& o) {
    auto b = CreateEngineBackend(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }
  static GenerationRequest Req(int i, int max_tokens = 10) {
    GenerationRequest r;
    for (int k = 0; k < 40 + 13 * i; ++k) r.prompt.push_back(300 + (k * 37 + i * 101) % 5000);
    r.max_tokens = max_tokens;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 50 + static_cast<uint64_t>(i);
    r.lane = i;
    return r;
  }
  static std::vector<int32_t> Run(InferenceBackend& b, const GenerationRequest& r, GenerationResult* out) {
    std::vector<int32_t> ids;
    Status st = b.Generate(r, [&](const TokenEvent& ev) { ids.push_back(ev.id); return true; }, out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return ids;
  }
  static double Value(const std::vector<StatValue>& vs, const std::string& name) {
    for (const StatValue& v : vs)
      if (v.name == name) return v.value;
    ADD_FAILURE() << "no stat " << name;
    return -1;
  }
  static testing::TempDir* dir_;
};
testing::TempDir* EngineBackendBatchTest::dir_ = nullptr;

TEST_F(EngineBackendBatchTest, ConcurrentGenerationsGiveTheSerialTokensAndReportBatchAndLanes) {
  auto serial = Backend(Options(1));
  auto batched = Backend(Options(4));
  ASSERT_TRUE(serial && batched);
  EXPECT_EQ(serial->max_parallel(), 1);
  EXPECT_EQ(batched->max_parallel(), 4);
  std::vector<std::vector<int32_t>> want(4), got(4);
  std::vector<GenerationResult> results(4);
  for (int i = 0; i < 4; ++i) {
    GenerationResult r;
    want[static_cast<size_t>(i)] = Run(*serial, Req(i), &r);
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { got[static_cast<size_t>(i)] = Run(*batched, Req(i), &results[static_cast<size_t>(i)]); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i], want[i]) << i;
    EXPECT_EQ(results[i].completion_tokens, 10);
  }
  const BackendStats s = batched->Stats();
  EXPECT_GT(Value(s.batch_values, "steps"), 0);
  EXPECT_GT(Value(s.batch_values, "decode_rows"), 0);
  EXPECT_EQ(Value(s.batch_values, "max_seqs"), 4);
  EXPECT_EQ(Value(s.batch_values, "completed"), 4);
  EXPECT_EQ(Value(s.batch_values, "kv_budget_bytes"), 64.0 * 1024 * 1024);
  EXPECT_EQ(Value(s.batch_values, "kv_reserved_bytes"), 0);
  ASSERT_EQ(s.lanes.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.lanes[i].lane, static_cast<int32_t>(i));
    EXPECT_EQ(s.lanes[i].requests, 1u);
    EXPECT_EQ(s.lanes[i].prompt_tokens, Req(static_cast<int>(i)).prompt.size());
  }
  // Serial: no batch section; the budget still shows with the engine's values.
  const BackendStats ss = serial->Stats();
  EXPECT_TRUE(ss.batch_values.empty());
  EXPECT_EQ(Value(ss.engine_values, "kv_budget_bytes"), 64.0 * 1024 * 1024);
}

// A generation reserves only what it adds: the runner admits it after the lookup, so a prefix found in
// the cache (the cache's memory, counted in its bytes) is not reserved again.
TEST_F(EngineBackendBatchTest, TheReservationCountsOnlyWhatTheCacheDidNotSupply) {
  auto b = Backend(Options(2));
  ASSERT_TRUE(b);
  GenerationRequest req = Req(3, 6);
  GenerationResult first;
  double during_first = -1;
  ASSERT_TRUE(b->Generate(req, [&](const TokenEvent&) {
                  if (during_first < 0) during_first = Value(b->Stats().batch_values, "kv_reserved_bytes");
                  return true;
                }, &first).ok());  // fills the cache
  const double per_pos = 2.0 * 2 * 16 * 2 * 2;  // layers x kv heads x head dim x K,V x f16 bytes
  const double L = static_cast<double>(req.prompt.size());
  EXPECT_EQ(during_first, (L + 6 + 32) * per_pos);
  GenerationRequest copy = req;
  copy.lane = 1;
  double during = -1;
  GenerationResult second;
  ASSERT_TRUE(b->Generate(copy, [&](const TokenEvent&) {
                  if (during < 0) during = Value(b->Stats().batch_values, "kv_reserved_bytes");
                  return true;
                }, &second).ok());
  EXPECT_EQ(second.cached_tokens, static_cast<int32_t>(L) - 1);
  EXPECT_EQ(during, (1 + 6 + 32) * per_pos);
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_reserved_bytes"), 0);
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_admitted"), 2);
}

// Two generations that do not fit together: the second waits inside Generate (the runner's queue) until
// the first ends, the backend reports the wait, and both finish; one that could never fit is refused.
TEST_F(EngineBackendBatchTest, TheKvBudgetAdmitsWhatFitsAndRefusesWhatNeverCould) {
  auto b = Backend(Options(2, "64K"));  // 256 positions of 256 bytes
  ASSERT_TRUE(b);
  GenerationRequest big = Req(0, 220);  // 40 + 220 = 260 positions
  const Status st = b->CheckAdmissible(big);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const char* part : {"260 KV positions", "66560 bytes", "65536 bytes"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
  }
  GenerationRequest a = Req(0, 100), c = Req(1, 100);  // 172 and 185 positions with the block
  a.sampling.temperature = 0;
  c.sampling.temperature = 0;
  EXPECT_TRUE(b->CheckAdmissible(a).ok());
  std::atomic<bool> a_started{false};
  std::atomic<bool> saw_wait{false};
  GenerationResult ra, rc;
  std::thread ta([&] {
    ASSERT_TRUE(b->Generate(a, [&](const TokenEvent&) {
                    a_started = true;
                    if (b->memory_waits().waiting == 1) saw_wait = true;
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // c queues meanwhile
                    return true;
                  }, &ra).ok());
  });
  ASSERT_TRUE(testing::PollUntil([&] { return a_started.load(); }, std::chrono::seconds(60)));
  ASSERT_TRUE(b->Generate(c, [](const TokenEvent&) { return true; }, &rc).ok());  // waits for a to end
  ta.join();
  EXPECT_TRUE(saw_wait);
  EXPECT_GT(ra.completion_tokens, 0);
  EXPECT_GT(rc.completion_tokens, 0);
  EXPECT_EQ(b->memory_waits().waits, 1u);
  EXPECT_EQ(b->memory_waits().waiting, 0u);
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_deferred"), 1);
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_admitted"), 2);
  // The RAM cache cap (16M asked) is clamped to the budget.
  double cap = -1;
  for (const StatValue& v : b->Stats().cache_tiers[0].values)
    if (v.name == "cap") cap = v.value;
  EXPECT_EQ(cap, 64.0 * 1024);
}

TEST_F(EngineBackendBatchTest, BadBatchingOptionsAreClearErrors) {
  struct Case {
    int parallel;
    int64_t step_tokens;
    std::string budget;
    const char* says;
  };
  for (const Case& c : {Case{0, 32, "", "--parallel 0"}, Case{65, 32, "", "--parallel 65"},
                        Case{2, 8, "", "--step-tokens 8"}, Case{2, 4096, "", "--step-tokens 4096"},
                        Case{2, 32, "0", "--kv-budget 0"}, Case{2, 32, "lots", "bad byte size"}}) {
    ServeOptions o = Options(c.parallel, c.budget);
    o.step_tokens = c.step_tokens;
    auto b = CreateEngineBackend(o);
    ASSERT_FALSE(b.ok()) << c.says;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_NE(b.status().message().find(c.says), std::string::npos) << b.status().message();
  }
}

}  // namespace
}  // namespace ember::server
