// The real engine backend with continuous batching (--parallel N > 1): concurrent Generate calls give
// the serial backend's tokens, the batch and per-lane stats, memory admission through the KV budget
// (TryAdmit / CheckAdmissible, the reservation shrunk by what the cache supplied), and the flags'
// validation.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "server/engine_backend.h"
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

// TryAdmit reserves the whole prompt; once the lookup found its prefix in the cache, the reservation
// of the running generation (handed back to Generate as GenerationRequest::admission, as the scheduler
// does) counts only what it adds.
TEST_F(EngineBackendBatchTest, TheReservationShrinksByWhatTheCacheSupplied) {
  auto b = Backend(Options(2));
  ASSERT_TRUE(b);
  GenerationRequest req = Req(3, 6);
  std::atomic<bool> cancel{false};
  req.cancel = &cancel;
  GenerationResult first;
  Run(*b, req, &first);  // fills the cache
  const double per_pos = 2.0 * 2 * 16 * 2 * 2;  // layers x kv heads x head dim x K,V x f16 bytes
  const double L = static_cast<double>(req.prompt.size());
  auto admission = b->TryAdmit(req);
  ASSERT_NE(admission, nullptr);
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_reserved_bytes"), (L + 6 + 32) * per_pos);
  GenerationRequest copy = req;
  copy.lane = 1;
  copy.admission = admission.get();
  double during = -1;
  GenerationResult second;
  ASSERT_TRUE(b->Generate(copy, [&](const TokenEvent&) {
                  if (during < 0) during = Value(b->Stats().batch_values, "kv_reserved_bytes");
                  return true;
                }, &second).ok());
  EXPECT_EQ(second.cached_tokens, static_cast<int32_t>(L) - 1);
  EXPECT_EQ(during, (1 + 6 + 32) * per_pos);
  admission.reset();
  EXPECT_EQ(Value(b->Stats().batch_values, "kv_reserved_bytes"), 0);
}

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
  EXPECT_TRUE(b->CheckAdmissible(a).ok());
  auto held = b->TryAdmit(a);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(b->TryAdmit(c), nullptr);  // must wait for the first
  held.reset();
  EXPECT_NE(b->TryAdmit(c), nullptr);
  EXPECT_GE(Value(b->Stats().batch_values, "kv_deferred"), 1);
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
