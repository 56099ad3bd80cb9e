// The scheduler's lanes and memory admission: max_parallel() lanes run Generate() at once, in FIFO
// order; memory admission happens inside the backend's Generate (here the FakeBackend's budget, FIFO
// like the engine's runner: never overtaken) and shows in the scheduler's stats and queue limit; a job
// cancelled while waiting for memory ends as cancelled and frees its queue slot; one lane's exception
// or shutdown hurts no other lane.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "forwarding_backend.h"
#include "server/fake_backend.h"
#include "server/scheduler.h"
#include "support/sim_env.h"

namespace ember::server {
namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<GenerationJob> Job(const std::string& prompt, int max_tokens = 8) {
  GenerationRequest g;
  for (unsigned char c : prompt) g.prompt.push_back(c);
  g.max_tokens = max_tokens;
  return std::make_shared<GenerationJob>(std::move(g), std::vector<std::string>{});
}

// Drains a job's events until kDone or `limit` of real time; `*done` is false when it timed out.
std::pair<std::string, JobEvent> Drain(GenerationJob& job, bool* done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  std::string text;
  const auto end = Clock::now() + limit;
  *done = false;
  while (Clock::now() < end) {
    for (JobEvent& ev : job.Wait(std::chrono::milliseconds(50))) {
      if (ev.kind == JobEvent::Kind::kDone) {
        *done = true;
        return {text, std::move(ev)};
      }
      text += ev.text;
    }
  }
  return {text, JobEvent{}};
}

// Polls `cond` in real time for up to 20 s (the lanes are threads; a shared CPU may be slow).
bool Eventually(const std::function<bool()>& cond) {
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

// A FakeBackend with hooks: the order Generate() calls began in (by prompt) and their lanes, and prompts
// starting with "throw" that throw from Generate.
class ProbeBackend final : public ForwardingBackend {
 public:
  explicit ProbeBackend(FakeBackend::Options o) : ForwardingBackend(o) {}

  Status Generate(const GenerationRequest& req, const TokenCallback& on_token, GenerationResult* out) override {
    const std::string prompt(req.prompt.begin(), req.prompt.end());
    {
      MutexLock lock(&mu_);
      started_.push_back(prompt);
      lanes_.push_back(req.lane);
    }
    if (prompt.rfind("throw", 0) == 0) throw std::runtime_error("lane exploded");
    return fake_.Generate(req, on_token, out);
  }

  std::vector<std::string> started() const {  // entered Generate (admitted or not yet)
    MutexLock lock(&mu_);
    return started_;
  }
  std::vector<int32_t> lanes() const {
    MutexLock lock(&mu_);
    return lanes_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> started_ GUARDED_BY(mu_);
  std::vector<int32_t> lanes_ GUARDED_BY(mu_);
};

// The fake's refused admission checks (each re-check of the waiting head counts); -1: not reported.
int64_t Refused(const FakeBackend& backend) {
  for (const StatValue& v : backend.Stats().batch_values) {
    if (v.name == "admissions_refused") return static_cast<int64_t>(v.value);
  }
  return -1;
}

FakeBackend::Options Lanes(int n, int64_t kv_budget_tokens = 0) {
  FakeBackend::Options o;
  o.max_parallel = n;
  o.kv_budget_tokens = kv_budget_tokens;
  return o;
}

TEST(SchedulerLanes, MaxParallelLanesRunAtOnceEachOnItsOwnLane) {
  FakeBackend backend(Lanes(3));
  backend.Hold();  // every Generate() waits inside until Release: only concurrent lanes get 3 in
  Scheduler s(&backend, 8);
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  for (const char* p : {"echo: a", "echo: b", "echo: c", "echo: d"}) {
    jobs.push_back(Job(p));
    ASSERT_TRUE(s.Submit(jobs.back()).ok());
  }
  ASSERT_TRUE(Eventually([&] { return backend.running_generations() == 3; }))
      << "inside Generate: " << backend.running_generations();
  Scheduler::Stats st = s.stats();
  EXPECT_EQ(st.lanes, 3u);
  EXPECT_EQ(st.running, 3u);
  EXPECT_EQ(st.queued, 1u);  // the fourth waits for a lane
  ASSERT_EQ(st.lane_states.size(), 3u);
  for (const Scheduler::LaneState& l : st.lane_states) EXPECT_TRUE(l.busy) << "lane " << l.lane;
  // Each running job was told its own lane.
  BackendStats b = backend.Stats();
  ASSERT_EQ(b.lanes.size(), 3u);
  for (const LaneStats& l : b.lanes) EXPECT_EQ(l.requests, 1u) << "lane " << l.lane;
  backend.Release();
  for (auto& j : jobs) {
    bool done = false;
    auto [text, ev] = Drain(*j, &done);
    ASSERT_TRUE(done);
    EXPECT_TRUE(ev.status.ok()) << ev.status.ToString();
  }
  EXPECT_EQ(backend.peak_running_generations(), 3);
  ASSERT_TRUE(Eventually([&] { return s.stats().completed == 4; }));
  uint64_t per_lane = 0;
  for (const Scheduler::LaneState& l : s.stats().lane_states) per_lane += l.completed;
  EXPECT_EQ(per_lane, 4u);
}

// Budget 100 tokens; A holds 60 (prompt 8 + max_tokens 52). B needs 60 and waits for memory inside
// Generate; C needs 18 and would fit beside A, but the backend's FIFO keeps it behind B. When A ends, B
// and C both run (78 <= 100).
TEST(SchedulerLanes, AdmissionWaitsInFifoOrderAndIsNeverOvertaken) {
  ProbeBackend backend(Lanes(4, 100));
  backend.fake().Hold();
  Scheduler s(&backend, 8);
  auto a = Job("echo: AA", 52), b = Job("echo: BB", 52), c = Job("echo: CC", 10);
  ASSERT_TRUE(s.Submit(a).ok());
  ASSERT_TRUE(Eventually([&] { return backend.fake().admission_order().size() == 1; }));
  EXPECT_EQ(backend.fake().kv_used_tokens(), 60);
  ASSERT_TRUE(s.Submit(b).ok());
  ASSERT_TRUE(s.Submit(c).ok());
  // Both reached the backend on lanes of their own, in arrival order.
  ASSERT_TRUE(Eventually([&] { return backend.started().size() == 3; }));
  EXPECT_EQ(backend.started(), (std::vector<std::string>{"echo: AA", "echo: BB", "echo: CC"}));
  ASSERT_TRUE(Eventually([&] { return s.stats().waiting_for_memory == 1; }));
  // Re-checked on the poll (no generation ended) and still refused; C never jumped ahead.
  const int64_t refused = Refused(backend.fake());
  ASSERT_TRUE(Eventually([&] { return Refused(backend.fake()) >= refused + 2; }));
  EXPECT_EQ(backend.fake().admission_order(), std::vector<std::string>{"echo: AA"});
  Scheduler::Stats st = s.stats();
  EXPECT_EQ(st.queued, 1u);   // B, waiting for memory; queued here: nothing
  EXPECT_EQ(st.running, 2u);  // three busy lanes less B's (C's lane waits behind B inside the backend)
  EXPECT_EQ(st.admission_waits, 1u);
  backend.fake().Release();
  for (auto* j : {&a, &b, &c}) {
    bool done = false;
    auto [text, ev] = Drain(**j, &done);
    ASSERT_TRUE(done);
    EXPECT_TRUE(ev.status.ok()) << ev.status.ToString();
  }
  EXPECT_EQ(backend.fake().admission_order(), (std::vector<std::string>{"echo: AA", "echo: BB", "echo: CC"}));
  st = s.stats();
  EXPECT_EQ(st.waiting_for_memory, 0u);
  EXPECT_EQ(st.admission_waits, 1u);  // C never had to wait for memory: it was never refused
  ASSERT_TRUE(Eventually([&] { return backend.fake().kv_used_tokens() == 0; }));  // every call released its tokens
}

// The admission is re-checked on the poll of the backend's Env too, not only when a generation ends:
// memory freed by something else (the cache shrinking on another thread, which signals nobody) lets
// the waiting job in at the next poll.
TEST(SchedulerLanes, AdmissionIsRetriedOnThePollOfTheInjectedClock) {
  testing::SimEnv sim;
  FakeBackend::Options o = Lanes(2, 100);
  o.env = &sim;
  FakeBackend backend(o);
  backend.set_kv_outside_tokens(100);  // the cache holds the whole budget
  Scheduler s(&backend, 8);
  auto job = Job("echo: polled");  // 12 + 8 tokens
  ASSERT_TRUE(s.Submit(job).ok());
  ASSERT_TRUE(sim.AwaitWaiters(1));  // refused once, waiting on the simulated poll
  EXPECT_EQ(Refused(backend), 1);
  Scheduler::Stats st = s.stats();
  EXPECT_EQ(st.waiting_for_memory, 1u);
  EXPECT_EQ(st.queued, 1u);
  EXPECT_EQ(st.running, 0u);
  sim.Advance(FakeBackend::kAdmissionPollMicros - 1);  // not yet due: no re-check
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(Refused(backend), 1);
  sim.Advance(1);  // due: re-checked, still refused, waits again
  ASSERT_TRUE(Eventually([&] { return Refused(backend) == 2; }));
  ASSERT_TRUE(sim.AwaitWaiters(1));
  backend.set_kv_outside_tokens(80);  // 80 + 20 fits now, unsignalled
  sim.Advance(FakeBackend::kAdmissionPollMicros);
  bool done = false;
  auto [text, ev] = Drain(*job, &done);
  ASSERT_TRUE(done);
  EXPECT_EQ(text, "polled");
  EXPECT_EQ(Refused(backend), 2);
  st = s.stats();
  EXPECT_EQ(st.waiting_for_memory, 0u);
  EXPECT_EQ(st.admission_waits, 1u);
}

TEST(SchedulerLanes, TheQueueLimitCountsJobsWaitingForMemory) {
  FakeBackend backend(Lanes(4, 100));
  backend.Hold();
  Scheduler s(&backend, 1);
  auto a = Job("echo: AA", 52), b = Job("echo: BB", 52);
  ASSERT_TRUE(s.Submit(a).ok());
  ASSERT_TRUE(Eventually([&] { return backend.running_generations() == 1; }));
  ASSERT_TRUE(s.Submit(b).ok());
  ASSERT_TRUE(Eventually([&] { return s.stats().waiting_for_memory == 1; }));
  // Three lanes are free and the scheduler's own queue is empty, but B (waiting for memory inside the
  // backend) holds the one queue slot: C is refused (the HTTP layer's 429).
  EXPECT_EQ(s.stats().queued, 1u);
  EXPECT_EQ(s.Submit(Job("echo: C", 1)).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.stats().rejected, 1u);
  backend.Release();
  for (auto* j : {&a, &b}) {
    bool done = false;
    Drain(**j, &done);
    EXPECT_TRUE(done);
  }
}

TEST(SchedulerLanes, CancelWhileWaitingForMemoryEndsCancelledAndFreesTheSlot) {
  ProbeBackend backend(Lanes(2, 100));
  backend.fake().Hold();
  Scheduler s(&backend, 1);
  auto a = Job("echo: AA", 52), b = Job("echo: BB", 52);
  ASSERT_TRUE(s.Submit(a).ok());
  ASSERT_TRUE(Eventually([&] { return backend.fake().admission_order().size() == 1; }));
  ASSERT_TRUE(s.Submit(b).ok());
  ASSERT_TRUE(Eventually([&] { return s.stats().waiting_for_memory == 1; }));
  b->Cancel();  // the client left
  EXPECT_EQ(s.stats().queued, 0u);
  auto c = Job("echo: CC", 10);
  EXPECT_TRUE(s.Submit(c).ok());  // B's slot is free at once
  bool done = false;
  auto [text, ev] = Drain(*b, &done);  // while A still runs: within one poll
  ASSERT_TRUE(done) << "a job cancelled while waiting for memory must end without waiting for memory";
  EXPECT_EQ(ev.result.finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(ev.status.ok());
  EXPECT_EQ(text, "");
  // C fits beside A (60 + 18 <= 100) and runs on the lane B left.
  ASSERT_TRUE(Eventually([&] { return backend.fake().admission_order().size() == 2; }));
  EXPECT_EQ(backend.fake().admission_order(), (std::vector<std::string>{"echo: AA", "echo: CC"}));  // B never ran
  EXPECT_EQ(backend.started(), (std::vector<std::string>{"echo: AA", "echo: BB", "echo: CC"}));
  EXPECT_EQ(backend.fake().generations_started(), 2);
  EXPECT_EQ(s.stats().waiting_for_memory, 0u);
  backend.fake().Release();
  for (auto* j : {&a, &c}) {
    Drain(**j, &done);
    EXPECT_TRUE(done);
  }
}

// Shutdown's cancel reaches a job waiting for memory inside the backend: it ends promptly, never run.
TEST(SchedulerLanes, ShutdownEndsAJobWaitingForMemory) {
  FakeBackend backend(Lanes(2, 100));
  backend.Hold();  // A would never end by itself
  Scheduler s(&backend, 8);
  auto a = Job("echo: AA", 52), b = Job("echo: BB", 52);
  ASSERT_TRUE(s.Submit(a).ok());
  ASSERT_TRUE(Eventually([&] { return backend.running_generations() == 1; }));
  ASSERT_TRUE(s.Submit(b).ok());
  ASSERT_TRUE(Eventually([&] { return s.stats().waiting_for_memory == 1; }));
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    s.Shutdown(std::chrono::milliseconds(20));
    returned.store(true);
  });
  const bool in_time = Eventually([&] { return returned.load(); });
  if (!in_time) backend.Release();
  stopper.join();
  ASSERT_TRUE(in_time) << "Shutdown did not end the job waiting for memory";
  for (auto* j : {&a, &b}) {
    bool done = false;
    auto [text, ev] = Drain(**j, &done);
    ASSERT_TRUE(done);
    EXPECT_EQ(ev.result.finish_reason, FinishReason::kCancelled);
  }
  EXPECT_EQ(backend.generations_started(), 1);  // B was never admitted
  EXPECT_EQ(backend.kv_used_tokens(), 0);
  EXPECT_EQ(s.stats().waiting_for_memory, 0u);
}

TEST(SchedulerLanes, AnExceptionInOneLaneFailsOnlyThatJob) {
  ProbeBackend backend(Lanes(2));
  backend.fake().Hold();
  Scheduler s(&backend, 8);
  auto steady = Job("echo: steady stream", 100);
  ASSERT_TRUE(s.Submit(steady).ok());
  ASSERT_TRUE(Eventually([&] { return backend.fake().running_generations() == 1; }));
  auto bad = Job("throw: now");
  ASSERT_TRUE(s.Submit(bad).ok());
  bool done = false;
  auto [bad_text, bad_ev] = Drain(*bad, &done);  // ran on the other lane while `steady` is held
  ASSERT_TRUE(done);
  EXPECT_EQ(bad_ev.status.code(), StatusCode::kInternal);
  EXPECT_NE(bad_ev.status.message().find("lane exploded"), std::string::npos) << bad_ev.status.message();
  EXPECT_EQ(s.stats().running, 1u);  // `steady` still runs
  EXPECT_FALSE(steady->done());
  auto after = Job("echo: after", 100);  // the lane that saw the exception goes on
  ASSERT_TRUE(s.Submit(after).ok());
  ASSERT_TRUE(Eventually([&] { return backend.fake().running_generations() == 2; }));
  backend.fake().Release();
  auto [text, ev] = Drain(*steady, &done);
  ASSERT_TRUE(done);
  EXPECT_TRUE(ev.status.ok()) << ev.status.ToString();
  EXPECT_EQ(text, "steady stream");
  auto [after_text, after_ev] = Drain(*after, &done);
  ASSERT_TRUE(done);
  EXPECT_EQ(after_text, "after");
  const std::vector<int32_t> lanes = backend.lanes();
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_NE(lanes[0], lanes[1]);  // the exception ran beside `steady`, on the other lane
}

TEST(SchedulerLanes, ShutdownWithSeveralLanesBusyCompletesEveryJob) {
  FakeBackend backend(Lanes(3));
  backend.Hold();  // nothing would end by itself
  Scheduler s(&backend, 8);
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(Job("echo: job " + std::to_string(i)));
    ASSERT_TRUE(s.Submit(jobs.back()).ok());
  }
  ASSERT_TRUE(Eventually([&] { return backend.running_generations() == 3; }));
  // Grace runs out: cancels all three lanes and the queue. Bounded, so that a lane left running fails
  // the test instead of hanging it (then the hold is lifted to let Shutdown return).
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    s.Shutdown(std::chrono::milliseconds(20));
    returned.store(true);
  });
  const bool in_time = Eventually([&] { return returned.load(); });
  if (!in_time) backend.Release();
  stopper.join();
  ASSERT_TRUE(in_time) << "Shutdown did not cancel every busy lane";
  for (auto& j : jobs) {
    EXPECT_TRUE(j->done());
    bool done = false;
    auto [text, ev] = Drain(*j, &done);
    ASSERT_TRUE(done);
    EXPECT_EQ(ev.result.finish_reason, FinishReason::kCancelled);
  }
  EXPECT_EQ(backend.generations_started(), 3);  // the queued two never ran
  EXPECT_EQ(s.stats().running, 0u);
}

TEST(SchedulerLanes, ShutdownGraceLetsEveryLaneFinish) {
  FakeBackend::Options o = Lanes(3);
  o.token_delay_ms = 2;
  FakeBackend backend(o);
  Scheduler s(&backend, 8);
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(Job("echo: reply number " + std::to_string(i), 100));
    ASSERT_TRUE(s.Submit(jobs.back()).ok());
  }
  s.Shutdown(std::chrono::seconds(60));
  for (int i = 0; i < 6; ++i) {
    bool done = false;
    auto [text, ev] = Drain(*jobs[static_cast<size_t>(i)], &done);
    ASSERT_TRUE(done);
    EXPECT_EQ(ev.result.finish_reason, FinishReason::kStop);
    EXPECT_EQ(text, "reply number " + std::to_string(i));
  }
  EXPECT_EQ(backend.cancelled_generations(), 0);
}

}  // namespace
}  // namespace ember::server
