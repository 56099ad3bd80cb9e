// BatchRunner (issue #16): concurrent generations give bitwise the tokens and logprobs of solo
// Engine::Generate runs; an in-flight shared prefix is computed once; a cancelled or failing sequence
// leaves the others unchanged.
#include "engine/batch_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "engine_test_util.h"

namespace ember {
namespace {

struct RunnerFixture {
  std::unique_ptr<Engine> engine;
  int64_t nv = 0;
};

RunnerFixture MakeEngine(const char* tag, int threads) {
  RunnerFixture f;
  const std::string dir = testutil::MakeTempDir(tag);
  const std::string model = testutil::GenModel(
      dir, "m", "--arch llama --tokenizer llama3 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 --seed 9");
  EngineOptions eo;
  eo.threads = threads;
  eo.load_tokenizer = false;
  eo.ubatch = 64;
  auto e = Engine::Load(model, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (e.ok()) f.engine = std::move(*e);
  if (f.engine) f.nv = f.engine->model().config().n_vocab;
  return f;
}

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int64_t nv) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(nv)));
  return t;
}

GenerateOptions Options(int i) {
  GenerateOptions go;
  go.max_tokens = 12 + i % 5;
  go.stop_at_eog = false;
  if (i % 2 == 0) {
    go.sampling.temperature = 0;  // greedy
  } else {
    go.sampling.temperature = 0.9f;
    go.sampling.seed = 100 + static_cast<uint64_t>(i);
    go.sampling.repeat_penalty = 1.1f;
  }
  go.top_logprobs = i % 3 == 0 ? 3 : -1;
  return go;
}

GenerateResult Solo(Engine& e, const std::vector<int32_t>& prompt, const GenerateOptions& go) {
  auto seq = std::move(e.NewSequence()).value();
  auto r = e.Generate(*seq, prompt, go, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : GenerateResult{};
}

void ExpectSameGeneration(const GenerateResult& got, const GenerateResult& want, int i) {
  EXPECT_EQ(got.tokens, want.tokens) << "job " << i;
  EXPECT_EQ(got.stop, want.stop) << "job " << i;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << "job " << i;
  for (size_t k = 0; k < got.logprobs.size(); ++k) {
    EXPECT_EQ(got.logprobs[k].token, want.logprobs[k].token);
    EXPECT_EQ(got.logprobs[k].logprob, want.logprobs[k].logprob);  // bitwise: same logits, same math
    ASSERT_EQ(got.logprobs[k].top.size(), want.logprobs[k].top.size());
    for (size_t m = 0; m < got.logprobs[k].top.size(); ++m) {
      EXPECT_EQ(got.logprobs[k].top[m].token, want.logprobs[k].top[m].token);
      EXPECT_EQ(got.logprobs[k].top[m].logprob, want.logprobs[k].top[m].logprob);
    }
  }
}

TEST(BatchRunnerTest, ConcurrentJobsEqualSoloRuns) {
  RunnerFixture f = MakeEngine("runner", 2);
  ASSERT_TRUE(f.engine);
  std::mt19937 rng(3);
  const int kJobs = 8;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < kJobs; ++i) prompts.push_back(RandomTokens(rng, 10 + 23 * i, f.nv));
  std::vector<GenerateResult> solo;
  for (int i = 0; i < kJobs; ++i) solo.push_back(Solo(*f.engine, prompts[i], Options(i)));
  for (int64_t step_tokens : {int64_t{16}, int64_t{300}}) {
    BatchRunnerOptions ro;
    ro.max_seqs = 5;  // fewer than the jobs: some wait for a slot
    ro.step_tokens = step_tokens;
    BatchRunner runner(*f.engine, ro);
    std::vector<GenerateResult> got(kJobs);
    std::vector<std::vector<int32_t>> streamed(kJobs);
    std::vector<std::thread> threads;
    for (int i = 0; i < kJobs; ++i) {
      threads.emplace_back([&, i] {
        auto seq = std::move(f.engine->NewSequence()).value();
        BatchJob job;
        job.seq = seq.get();
        job.prompt = prompts[i];
        job.options = Options(i);
        job.on_token = [&streamed, i](int32_t t) {
          streamed[i].push_back(t);
          return true;
        };
        auto r = runner.Run(std::move(job));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(r->gen.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
        EXPECT_GT(r->prefill_compute_s, 0);
        EXPECT_LE(r->prefill_compute_s, r->gen.prefill_s);  // a share of the steps, within the wall time
        EXPECT_EQ(seq->n_pos(), static_cast<int64_t>(prompts[i].size() + r->gen.tokens.size()) - 1);
        got[i] = std::move(r->gen);
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kJobs; ++i) {
      ExpectSameGeneration(got[i], solo[i], i);
      EXPECT_EQ(streamed[i], got[i].tokens);
    }
    const BatchRunnerStats st = runner.stats();
    EXPECT_EQ(st.completed, static_cast<uint64_t>(kJobs));
    EXPECT_EQ(st.running, 0);
    EXPECT_GT(st.steps, 0u);
    // Several sequences per step on average: the point of batching.
    EXPECT_GT(st.occupancy_sum, st.steps) << "steps " << st.steps;
  }
}

// Two sequences with a common 200-token prefix admitted together: the later one waits for the earlier
// one's prefill and adopts a view of it, so the prefix is computed once, and both outputs are unchanged.
TEST(BatchRunnerTest, InFlightSharedPrefixIsComputedOnce) {
  RunnerFixture f = MakeEngine("runnershare", 2);
  ASSERT_TRUE(f.engine);
  std::mt19937 rng(5);
  const std::vector<int32_t> prefix = RandomTokens(rng, 200, f.nv);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p = prefix;
    p.push_back(static_cast<int32_t>(10 + i));  // they differ right after the prefix
    for (int32_t t : RandomTokens(rng, 7 + 5 * i, f.nv)) p.push_back(t);
    prompts.push_back(std::move(p));
  }
  std::vector<GenerateResult> solo;
  for (int i = 0; i < 3; ++i) solo.push_back(Solo(*f.engine, prompts[i], Options(i)));
  BatchRunnerOptions ro;
  ro.max_seqs = 4;
  ro.step_tokens = 32;
  BatchRunner runner(*f.engine, ro);
  std::vector<BatchJobResult> got(3);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 3; ++i) seqs.push_back(std::move(f.engine->NewSequence()).value());
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      BatchJob job;
      job.seq = seqs[i].get();
      job.prompt = prompts[i];
      job.options = Options(i);
      job.share_key = "ns";
      auto r = runner.Run(std::move(job));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      got[i] = std::move(*r);
    });
  }
  for (auto& t : threads) t.join();
  int64_t forwarded = 0, shared = 0, expected = static_cast<int64_t>(prefix.size());
  for (int i = 0; i < 3; ++i) {
    ExpectSameGeneration(got[i].gen, solo[i], i);
    forwarded += got[i].gen.prompt_tokens;
    shared += got[i].shared_tokens;
    EXPECT_EQ(got[i].gen.prompt_tokens + got[i].shared_tokens, static_cast<int64_t>(prompts[i].size()));
    expected += static_cast<int64_t>(prompts[i].size() - prefix.size());
  }
  EXPECT_EQ(forwarded, expected) << "the shared prefix was computed more than once";
  EXPECT_EQ(shared, 2 * static_cast<int64_t>(prefix.size()));
  EXPECT_EQ(runner.stats().shared_tokens, static_cast<uint64_t>(shared));
  // The followers' blocks of the prefix are the first sequence's (zero copy), except the copied tail.
  EXPECT_GT(seqs[1]->kv().BlockUseCount(0), 1);
}

// A sequence cancelled mid-batch (client gone) and one whose prompt cannot run (a bad token id) end
// alone; the others' tokens are exactly their solo runs'.
TEST(BatchRunnerTest, CancelAndFailureLeaveOthersUnchanged) {
  RunnerFixture f = MakeEngine("runnercancel", 2);
  ASSERT_TRUE(f.engine);
  std::mt19937 rng(8);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(RandomTokens(rng, 30 + 11 * i, f.nv));
  prompts[3][5] = static_cast<int32_t>(f.nv + 7);  // out of the vocabulary
  std::vector<GenerateResult> solo;
  for (int i = 0; i < 3; ++i) solo.push_back(Solo(*f.engine, prompts[i], Options(i)));
  BatchRunnerOptions ro;
  ro.max_seqs = 4;
  ro.step_tokens = 24;
  BatchRunner runner(*f.engine, ro);
  std::atomic<bool> cancel1{false};
  std::vector<StatusOr<BatchJobResult>> got(4, Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto seq = std::move(f.engine->NewSequence()).value();
      BatchJob job;
      job.seq = seq.get();
      job.prompt = prompts[i];
      job.options = Options(i);
      job.options.max_tokens = 20;
      if (i == 1) {
        job.options.cancel = &cancel1;
        job.on_token = [&cancel1](int32_t) {
          static int seen = 0;
          if (++seen == 3) cancel1.store(true);  // the client leaves after three tokens
          return true;
        };
      }
      if (i == 2) job.on_token = [n = 0](int32_t) mutable { return ++n < 5; };  // a stop string after five
      got[i] = runner.Run(std::move(job));
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(got[0].ok());
  GenerateOptions o0 = Options(0);
  o0.max_tokens = 20;
  ExpectSameGeneration(got[0]->gen, Solo(*f.engine, prompts[0], o0), 0);
  ASSERT_TRUE(got[1].ok());
  EXPECT_EQ(got[1]->gen.stop, StopReason::kCancelled);
  EXPECT_LE(got[1]->gen.tokens.size(), 4u);
  ASSERT_TRUE(got[2].ok());
  EXPECT_EQ(got[2]->gen.stop, StopReason::kCallback);
  EXPECT_EQ(got[2]->gen.tokens.size(), 5u);
  GenerateOptions o2 = Options(2);
  o2.max_tokens = 20;
  const GenerateResult s2 = Solo(*f.engine, prompts[2], o2);
  EXPECT_TRUE(std::equal(got[2]->gen.tokens.begin(), got[2]->gen.tokens.end(), s2.tokens.begin()));
  ASSERT_FALSE(got[3].ok());
  EXPECT_EQ(got[3].status().code(), StatusCode::kInvalidArgument) << got[3].status().ToString();
  const BatchRunnerStats st = runner.stats();
  EXPECT_EQ(st.failed, 1u);
  EXPECT_EQ(st.cancelled, 1u);
  EXPECT_EQ(st.completed, 2u);
}

TEST(BatchRunnerTest, BadJobsAreRefusedAndShutdownRefusesMore) {
  RunnerFixture f = MakeEngine("runnerbad", 1);
  ASSERT_TRUE(f.engine);
  BatchRunner runner(*f.engine, {});
  auto seq = std::move(f.engine->NewSequence()).value();
  const std::vector<int32_t> prompt = {1, 2, 3};
  BatchJob empty;
  empty.seq = seq.get();
  EXPECT_EQ(runner.Run(empty).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(f.engine->Prefill(*seq, std::vector<int32_t>{1, 2, 4}).ok());
  BatchJob not_prefix;
  not_prefix.seq = seq.get();
  not_prefix.prompt = prompt;
  EXPECT_EQ(runner.Run(not_prefix).status().code(), StatusCode::kInvalidArgument);
  BatchJob max0;
  auto fresh = std::move(f.engine->NewSequence()).value();
  max0.seq = fresh.get();
  max0.prompt = prompt;
  max0.options.max_tokens = 0;
  auto r = runner.Run(max0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->gen.tokens.empty());
  EXPECT_EQ(r->gen.stop, StopReason::kLength);
  runner.Shutdown();
  auto again = std::move(f.engine->NewSequence()).value();
  BatchJob late;
  late.seq = again.get();
  late.prompt = prompt;
  EXPECT_EQ(runner.Run(late).status().code(), StatusCode::kFailedPrecondition);
}

// The runner's queue is the only memory admission: a job that does not fit beside what the budget
// holds outside the reservations (here a simulated RAM cache) waits, its own Run() thread is asked to
// make room on every poll (never the step thread), and it runs once room is made; a job cancelled while
// it waits for memory leaves the queue promptly, having run nothing.
TEST(BatchRunnerTest, AJobWaitsForMemoryItsCallerMakesRoomAndACancelledWaiterLeaves) {
  RunnerFixture f = MakeEngine("runnermem", 1);
  ASSERT_TRUE(f.engine);
  std::atomic<int64_t> cache{500};   // what the budget holds outside the reservations
  std::atomic<bool> can_shrink{false};
  std::atomic<int> room_calls{0};
  std::atomic<int64_t> last_room{-1};
  BatchRunnerOptions ro;
  ro.kv_budget_bytes = 1000;
  ro.kv_outside_bytes = [&cache] { return cache.load(); };
  ro.memory_poll_micros = 5000;
  BatchRunner runner(*f.engine, ro);
  const std::vector<int32_t> prompt = {5, 6, 7, 8};
  auto run = [&](const std::atomic<bool>* cancel) {
    auto seq = std::move(f.engine->NewSequence()).value();
    BatchJob job;
    job.seq = seq.get();
    job.prompt = prompt;
    job.options.max_tokens = 3;
    job.options.stop_at_eog = false;
    job.options.cancel = cancel;
    job.kv_bytes = 600;  // 600 + 500 > 1000 until the cache shrinks to 400
    const std::thread::id caller = std::this_thread::get_id();
    job.make_room = [&, caller](int64_t room) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      last_room = room;
      ++room_calls;
      if (can_shrink) cache = std::min<int64_t>(cache, room);
    };
    return runner.Run(std::move(job));
  };
  auto blocked = [&] { return runner.stats().waiting_for_memory == 1; };
  auto poll = [](const std::function<bool()>& ok) {
    for (int i = 0; i < 2000 && !ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return ok();
  };

  StatusOr<BatchJobResult> first = Internal("not run");
  std::thread t1([&] { first = run(nullptr); });
  ASSERT_TRUE(poll(blocked));
  ASSERT_TRUE(poll([&] { return room_calls >= 3; }));  // asked again on every poll while it waits
  EXPECT_EQ(last_room, 400);
  EXPECT_EQ(runner.stats().running, 0);
  can_shrink = true;  // the cache can give way now: the next poll makes room and the job runs
  t1.join();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->gen.tokens.size(), 3u);
  EXPECT_EQ(cache, 400);
  BatchRunnerStats st = runner.stats();
  EXPECT_EQ(st.admission_waits, 1u);
  EXPECT_EQ(st.kv_admitted, 1u);
  EXPECT_EQ(st.waiting_for_memory, 0);
  EXPECT_EQ(st.kv_reserved_bytes, 0);

  cache = 500;
  can_shrink = false;
  std::atomic<bool> cancel{false};
  StatusOr<BatchJobResult> second = Internal("not run");
  std::thread t2([&] { second = run(&cancel); });
  ASSERT_TRUE(poll(blocked));
  cancel = true;
  t2.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->gen.stop, StopReason::kCancelled);
  EXPECT_TRUE(second->gen.tokens.empty());
  st = runner.stats();
  EXPECT_EQ(st.admission_waits, 2u);
  EXPECT_EQ(st.kv_admitted, 1u);
  EXPECT_EQ(st.cancelled, 1u);
  EXPECT_TRUE(poll([&] { return runner.stats().waiting_for_memory == 0; }));
  EXPECT_EQ(runner.stats().waiting, 0);
}

}  // namespace
}  // namespace ember
