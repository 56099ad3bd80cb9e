// ModelRouter (server/model_router.h) without HTTP: model selection, load on demand (one load for
// concurrent requests), failed loads, --max-loaded and memory-budget LRU unloads (flush before free),
// busy and too-large refusals, idle unload on a simulated clock, drain. The models are FakeBackends
// behind a loader that records what the router asks of it.
#include "server/model_router.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "server/forwarding_backend.h"
#include "support/sim_env.h"

namespace ember::server {
namespace {

using std::chrono::milliseconds;

// What happened, in order: "load a 30" (name, granted KV), "flush a", "free a".
class EventLog {
 public:
  void Add(std::string e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

class RecordingBackend final : public ForwardingBackend {
 public:
  RecordingBackend(std::string name, EventLog* log) : ForwardingBackend(OptionsFor(name)), log_(log) {}
  ~RecordingBackend() override { log_->Add("free " + fake_.model_id()); }
  Status FlushCache() override {
    log_->Add("flush " + fake_.model_id());
    return Status::Ok();
  }

 private:
  static FakeBackend::Options OptionsFor(const std::string& name) {
    FakeBackend::Options o;
    o.model_id = name;
    return o;
  }
  EventLog* log_;
};

class RecordingLoader final : public ModelLoader {
 public:
  std::map<std::string, ModelCost> costs;  // default: nothing
  std::map<std::string, Status> failures;  // Load fails with this
  EventLog log;
  std::atomic<int> loads{0};

  StatusOr<ModelCost> Estimate(const ModelSpec& spec) override {
    auto it = costs.find(spec.name);
    return it == costs.end() ? ModelCost{} : it->second;
  }
  StatusOr<std::unique_ptr<InferenceBackend>> Load(const ModelSpec& spec, uint64_t kv) override {
    ++loads;
    {
      std::unique_lock<std::mutex> lock(gate_mu_);
      ++waiting_;
      gate_cv_.notify_all();
      // Bounded: a test that fails before Open() must not hang here (or in the router's destructor).
      if (!gate_cv_.wait_for(lock, std::chrono::seconds(60), [&] { return !gated_; })) {
        ADD_FAILURE() << "the load gate was never opened";
      }
      --waiting_;
    }
    log.Add("load " + spec.name + " " + std::to_string(kv));
    if (auto it = failures.find(spec.name); it != failures.end()) return it->second;
    return std::unique_ptr<InferenceBackend>(std::make_unique<RecordingBackend>(spec.name, &log));
  }

  // While closed, Load blocks (after counting itself) until Open().
  void Close() {
    std::lock_guard<std::mutex> lock(gate_mu_);
    gated_ = true;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(gate_mu_);
    gated_ = false;
    gate_cv_.notify_all();
  }
  void AwaitBlockedLoads(int n) {
    std::unique_lock<std::mutex> lock(gate_mu_);
    if (!gate_cv_.wait_for(lock, std::chrono::seconds(60), [&] { return waiting_ >= n; })) {
      ADD_FAILURE() << "only " << waiting_ << " of " << n << " loads reached the gate within 60 s";
    }
  }

 private:
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool gated_ = false;
  int waiting_ = 0;
};

std::vector<ModelSpec> Specs(std::vector<std::string> names) {
  std::vector<ModelSpec> specs;
  for (std::string& n : names) {
    ModelSpec s;
    s.name = n;
    s.path = "/models/" + n + ".gguf";
    specs.push_back(std::move(s));
  }
  return specs;
}

ModelState StateOf(const ModelRouter& r, const std::string& name) {
  for (const ModelStatus& m : r.List()) {
    if (m.spec.name == name) return m.state;
  }
  ADD_FAILURE() << "no model " << name;
  return ModelState::kFailed;
}

// Polls (in real time, bounded) until `name` is in `state`: for what a background thread does.
bool AwaitState(const ModelRouter& r, const std::string& name, ModelState state) {
  for (int i = 0; i < 20000; ++i) {
    if (StateOf(r, name) == state) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return false;
}

TEST(ModelRouter, SingleModelServesEveryName) {
  FakeBackend backend;
  ModelRouter router(&backend, "only", 8, Env::Default());
  EXPECT_FALSE(router.multi());
  for (const char* name : {"", "gpt-4o", "only", "claude-sonnet-4"}) {
    Acquired got = router.Acquire(name);
    ASSERT_TRUE(got.ok()) << got.message;
    EXPECT_EQ(got.lease.id(), "only");
    EXPECT_EQ(&got.lease.backend(), &backend);
  }
  ASSERT_EQ(router.LeaseLoaded().size(), 1u);
  EXPECT_EQ(router.stats().loaded, 1u);
}

TEST(ModelRouter, UnknownEmptyAndUnrunnableNamesFailNamingWhatIsServed) {
  RecordingLoader loader;
  std::vector<ModelSpec> specs = Specs({"b-model", "a-model", "broken"});
  specs[2].runnable = false;
  specs[2].why_not = "architecture 'mamba' is not supported";
  ModelRouter router(specs, &loader, {});
  EXPECT_EQ(router.RunnableNames(), (std::vector<std::string>{"a-model", "b-model"}));

  Acquired unknown = router.Acquire("gpt-4o");
  EXPECT_EQ(unknown.error, AcquireError::kUnknownModel);
  EXPECT_NE(unknown.message.find("'gpt-4o'"), std::string::npos) << unknown.message;
  EXPECT_NE(unknown.message.find("a-model, b-model"), std::string::npos) << unknown.message;
  EXPECT_EQ(unknown.message.find("broken"), std::string::npos) << unknown.message;

  Acquired none = router.Acquire("");
  EXPECT_EQ(none.error, AcquireError::kNoModelNamed);
  EXPECT_NE(none.message.find("a-model, b-model"), std::string::npos) << none.message;

  Acquired broken = router.Acquire("broken");
  EXPECT_EQ(broken.error, AcquireError::kNotRunnable);
  EXPECT_NE(broken.message.find("mamba"), std::string::npos) << broken.message;
  // Named by the model, never by its file's path (a client must not learn the server's layout).
  EXPECT_NE(broken.message.find("'broken'"), std::string::npos) << broken.message;
  EXPECT_EQ(broken.message.find("/models/"), std::string::npos) << broken.message;
  EXPECT_EQ(loader.loads.load(), 0);

  // A hostile name is echoed bounded.
  Acquired long_name = router.Acquire(std::string(100000, 'x'));
  EXPECT_LT(long_name.message.size(), 400u);
}

TEST(ModelRouter, AnEmptyNameSelectsTheOnlyRunnableModel) {
  RecordingLoader loader;
  std::vector<ModelSpec> specs = Specs({"one", "broken"});
  specs[1].runnable = false;
  ModelRouter router(specs, &loader, {});
  Acquired got = router.Acquire("");
  ASSERT_TRUE(got.ok()) << got.message;
  EXPECT_EQ(got.lease.id(), "one");
}

TEST(ModelRouter, LoadsOnDemandOnceAndKeepsTheModelLoaded) {
  RecordingLoader loader;
  ModelRouter router(Specs({"a", "b"}), &loader, {});
  EXPECT_EQ(StateOf(router, "a"), ModelState::kUnloaded);
  {
    Acquired first = router.Acquire("a");
    ASSERT_TRUE(first.ok()) << first.message;
    EXPECT_EQ(first.lease.id(), "a");
    EXPECT_EQ(first.lease.backend().model_id(), "a");
    EXPECT_EQ(first.lease.model().path, "/models/a.gguf");
    Acquired second = router.Acquire("a");
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(&second.lease.backend(), &first.lease.backend());
    const std::vector<ModelStatus> list = router.List();
    EXPECT_EQ(list[0].state, ModelState::kLoaded);
    EXPECT_EQ(list[0].leases, 2);
    EXPECT_EQ(list[1].state, ModelState::kUnloaded);
  }
  EXPECT_EQ(loader.loads.load(), 1);
  EXPECT_EQ(StateOf(router, "a"), ModelState::kLoaded);  // kept: no limit asks for its room
  EXPECT_EQ(router.List()[0].leases, 0);
  EXPECT_EQ(router.stats().loads, 1u);
}

TEST(ModelRouter, ConcurrentRequestsWaitForTheSameLoad) {
  RecordingLoader loader;
  ModelRouter router(Specs({"a"}), &loader, {});
  loader.Close();
  std::vector<std::thread> clients;
  std::atomic<int> served{0};
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      Acquired got = router.Acquire("a");
      if (got.ok() && got.lease.id() == "a") ++served;
    });
  }
  loader.AwaitBlockedLoads(1);
  EXPECT_EQ(StateOf(router, "a"), ModelState::kLoading);
  loader.Open();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(served.load(), 4);
  EXPECT_EQ(loader.loads.load(), 1);
}

TEST(ModelRouter, AFailedLoadNamesTheFileAndTheReasonAndIsRetried) {
  RecordingLoader loader;
  loader.failures["a"] = Corrupt("tensor 'blk.0.attn_q.weight' extends past the end of the file");
  ModelRouter router(Specs({"a"}), &loader, {});
  Acquired got = router.Acquire("a");
  EXPECT_EQ(got.error, AcquireError::kLoadFailed);
  EXPECT_NE(got.message.find("a.gguf"), std::string::npos) << got.message;
  EXPECT_EQ(got.message.find("/models/"), std::string::npos) << got.message;
  EXPECT_NE(got.message.find("extends past the end"), std::string::npos) << got.message;
  const ModelStatus st = router.List()[0];
  EXPECT_EQ(st.state, ModelState::kFailed);
  EXPECT_EQ(st.last_error, got.message);
  EXPECT_EQ(st.load_failures, 1u);
  EXPECT_EQ(st.charged_bytes, 0u);

  loader.failures.clear();  // the file was fixed: the next request loads it
  Acquired again = router.Acquire("a");
  ASSERT_TRUE(again.ok()) << again.message;
  EXPECT_EQ(router.List()[0].last_error, "");
  EXPECT_EQ(loader.loads.load(), 2);
}

TEST(ModelRouter, MaxLoadedUnloadsTheIdleModelFlushingItBeforeFreeingIt) {
  RecordingLoader loader;
  ModelRouter::Options o;
  o.max_loaded = 1;
  ModelRouter router(Specs({"a", "b"}), &loader, o);
  ASSERT_TRUE(router.Acquire("a").ok());  // released at once
  Acquired b = router.Acquire("b");
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(StateOf(router, "a"), ModelState::kUnloaded);
  EXPECT_EQ(StateOf(router, "b"), ModelState::kLoaded);
  // a's cache is made durable before a is freed, and both before b loads.
  EXPECT_EQ(loader.log.events(), (std::vector<std::string>{"load a 0", "flush a", "free a", "load b 0"}));
  EXPECT_EQ(router.stats().lru_unloads, 1u);
  EXPECT_EQ(router.List()[0].unloads, 1u);
}

TEST(ModelRouter, AModelInUseIsNeverUnloadedAndTheNewLoadIsBusy) {
  RecordingLoader loader;
  ModelRouter::Options o;
  o.max_loaded = 1;
  ModelRouter router(Specs({"a", "b"}), &loader, o);
  Acquired a = router.Acquire("a");
  ASSERT_TRUE(a.ok());
  Acquired b = router.Acquire("b");
  EXPECT_EQ(b.error, AcquireError::kBusy);
  EXPECT_NE(b.message.find("'b'"), std::string::npos) << b.message;
  EXPECT_NE(b.message.find("a ("), std::string::npos) << b.message;
  EXPECT_NE(b.message.find("1 requests"), std::string::npos) << b.message;
  EXPECT_NE(b.message.find("--max-loaded 1"), std::string::npos) << b.message;
  EXPECT_EQ(StateOf(router, "a"), ModelState::kLoaded);
  EXPECT_EQ(StateOf(router, "b"), ModelState::kUnloaded);  // refused for room: not failed
  EXPECT_EQ(router.stats().refused, 1u);
  a.lease.Release();
  Acquired retry = router.Acquire("b");
  ASSERT_TRUE(retry.ok()) << retry.message;
  EXPECT_EQ(StateOf(router, "a"), ModelState::kUnloaded);
}

// --load-wait on the simulated clock (only a release, an Advance or a drain can end the wait): `a` is
// loaded and leased, as by a request streaming from it, and a client thread asks for `b`, which needs
// a's room (--max-loaded 1) and waits.
class LoadWaitTest : public ::testing::Test {
 protected:
  void Start(double wait_s, size_t max_queue = 64) {
    ModelRouter::Options o;
    o.max_loaded = 1;
    o.room_wait_s = wait_s;
    o.max_queue = max_queue;
    o.env = &sim_;
    router_ = std::make_unique<ModelRouter>(Specs({"a", "b"}), &loader_, o);
    a_ = router_->Acquire("a");
    ASSERT_TRUE(a_.ok());
    client_ = std::thread([this] { b_ = router_->Acquire("b"); });
    ASSERT_TRUE(sim_.AwaitWaiters(1));
    EXPECT_EQ(StateOf(*router_, "b"), ModelState::kLoading);  // waiting for room, not refused
  }
  void TearDown() override {
    if (client_.joinable()) client_.join();
  }

  testing::SimEnv sim_;
  RecordingLoader loader_;
  std::unique_ptr<ModelRouter> router_;
  Acquired a_, b_;
  std::thread client_;
};

TEST_F(LoadWaitTest, ALoadWaitsForTheModelInUseToFinishThenSwaps) {
  Start(30);
  EXPECT_EQ(StateOf(*router_, "a"), ModelState::kLoaded);
  a_.lease.Release();  // a's request ends: a goes idle, is unloaded, b loads
  client_.join();
  ASSERT_TRUE(b_.ok()) << b_.message;
  EXPECT_EQ(StateOf(*router_, "a"), ModelState::kUnloaded);
  EXPECT_EQ(loader_.log.events(), (std::vector<std::string>{"load a 0", "flush a", "free a", "load b 0"}));
  EXPECT_EQ(router_->stats().refused, 0u);
}

TEST_F(LoadWaitTest, ALoadThatWaitedPastLoadWaitIsBusyAndSaysSo) {
  Start(5);
  sim_.AdvanceSeconds(4);  // not yet
  ASSERT_TRUE(sim_.AwaitWaiters(1));
  EXPECT_EQ(StateOf(*router_, "b"), ModelState::kLoading);
  sim_.AdvanceSeconds(1);
  client_.join();
  EXPECT_EQ(b_.error, AcquireError::kBusy);
  EXPECT_NE(b_.message.find("Waited 5s"), std::string::npos) << b_.message;
  EXPECT_NE(b_.message.find("--load-wait"), std::string::npos) << b_.message;
  EXPECT_EQ(StateOf(*router_, "a"), ModelState::kLoaded);  // nothing unloaded under a request
  EXPECT_EQ(StateOf(*router_, "b"), ModelState::kUnloaded);
  EXPECT_EQ(router_->stats().refused, 1u);
  EXPECT_EQ(loader_.loads.load(), 1);
}

// Requests for a model being loaded wait for that load, each holding a connection worker: as many as its
// queue holds, the rest are refused at once.
TEST_F(LoadWaitTest, AtMostMaxQueueRequestsWaitForALoad) {
  Start(30, /*max_queue=*/1);
  Acquired second;
  std::thread waiter([&] { second = router_->Acquire("b"); });
  bool waiting = false;
  for (int i = 0; i < 20000 && !waiting; ++i) {
    waiting = router_->List()[1].waiting == 1;
    if (!waiting) std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(waiting);
  Acquired third = router_->Acquire("b");
  EXPECT_EQ(third.error, AcquireError::kBusy);
  EXPECT_NE(third.message.find("1 requests already wait"), std::string::npos) << third.message;
  a_.lease.Release();  // b loads; the request that waited for it gets it too
  client_.join();
  waiter.join();
  EXPECT_TRUE(b_.ok()) << b_.message;
  EXPECT_TRUE(second.ok()) << second.message;
  EXPECT_EQ(router_->List()[1].waiting, 0u);
  EXPECT_EQ(loader_.loads.load(), 2);  // a, then b once
}

TEST_F(LoadWaitTest, DrainEndsALoadWaitingForRoom) {
  Start(3600);
  router_->Drain(milliseconds(0));  // returns without an Advance: the waiting load gives up at once
  client_.join();
  EXPECT_EQ(b_.error, AcquireError::kStopping) << b_.message;
  EXPECT_EQ(StateOf(*router_, "b"), ModelState::kUnloaded);
  EXPECT_EQ(loader_.loads.load(), 1);
  a_.lease.Release();
}

TEST(ModelRouter, TheLeastRecentlyUsedIdleModelGoesFirst) {
  testing::SimEnv sim;
  RecordingLoader loader;
  ModelRouter::Options o;
  o.max_loaded = 2;
  o.env = &sim;
  ModelRouter router(Specs({"a", "b", "c"}), &loader, o);
  ASSERT_TRUE(router.Acquire("a").ok());
  sim.AdvanceSeconds(1);
  ASSERT_TRUE(router.Acquire("b").ok());
  sim.AdvanceSeconds(1);
  ASSERT_TRUE(router.Acquire("a").ok());  // a is now the more recent
  sim.AdvanceSeconds(1);
  ASSERT_TRUE(router.Acquire("c").ok());
  EXPECT_EQ(StateOf(router, "a"), ModelState::kLoaded);
  EXPECT_EQ(StateOf(router, "b"), ModelState::kUnloaded);
  EXPECT_EQ(StateOf(router, "c"), ModelState::kLoaded);
}

TEST(ModelRouter, MemoryBudgetCountsEveryLoadedModel) {
  RecordingLoader loader;
  // a and b: 40 bytes of weights, KV 20 to 50. c: 10 of weights, KV exactly 5.
  loader.costs["a"] = {40, 20, 50};
  loader.costs["b"] = {40, 20, 50};
  loader.costs["c"] = {10, 5, 5};
  ModelRouter::Options o;
  o.memory_budget_bytes = 100;
  ModelRouter router(Specs({"a", "b", "c"}), &loader, o);
  Acquired a = router.Acquire("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(router.List()[0].kv_budget_bytes, 50u);  // the whole want: 90 of 100
  EXPECT_EQ(router.stats().charged_bytes, 90u);
  Acquired c = router.Acquire("c");  // 15 does not fit beside 90, and a is in use
  EXPECT_EQ(c.error, AcquireError::kBusy);
  EXPECT_NE(c.message.find("15 B"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("90 B"), std::string::npos) << c.message;
  a.lease.Release();
  c = router.Acquire("c");  // a is idle now: unloaded to make room
  ASSERT_TRUE(c.ok()) << c.message;
  EXPECT_EQ(StateOf(router, "a"), ModelState::kUnloaded);
  Acquired b = router.Acquire("b");  // beside c's 15: KV cut to what is left, 100 - 15 - 40 = 45
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(router.List()[1].kv_budget_bytes, 45u);
  EXPECT_EQ(router.stats().charged_bytes, 100u);
  EXPECT_EQ(loader.log.events().back(), "load b 45");
}

TEST(ModelRouter, AModelLargerThanTheWholeBudgetIsRefusedWithoutUnloadingAnything) {
  RecordingLoader loader;
  loader.costs["small"] = {10, 10, 10};
  loader.costs["huge"] = {900, 200, 400};
  ModelRouter::Options o;
  o.memory_budget_bytes = 1000;
  ModelRouter router(Specs({"small", "huge"}), &loader, o);
  ASSERT_TRUE(router.Acquire("small").ok());
  Acquired huge = router.Acquire("huge");
  EXPECT_EQ(huge.error, AcquireError::kTooLarge);
  EXPECT_NE(huge.message.find("1.07 KiB"), std::string::npos) << huge.message;  // 1100 B
  EXPECT_NE(huge.message.find("--memory-budget"), std::string::npos) << huge.message;
  EXPECT_EQ(StateOf(router, "small"), ModelState::kLoaded);
  EXPECT_EQ(StateOf(router, "huge"), ModelState::kUnloaded);
  EXPECT_EQ(loader.loads.load(), 1);
}

TEST(ModelRouter, BusyWhenIdleModelsCouldNotMakeEnoughRoomUnloadsNothing) {
  RecordingLoader loader;
  loader.costs["a"] = {50, 10, 10};
  loader.costs["b"] = {20, 10, 10};
  loader.costs["c"] = {40, 10, 10};
  ModelRouter::Options o;
  o.memory_budget_bytes = 100;
  ModelRouter router(Specs({"a", "b", "c"}), &loader, o);
  Acquired a = router.Acquire("a");  // 60, held
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(router.Acquire("b").ok());  // 30, idle
  Acquired c = router.Acquire("c");  // 50: even without b only 40 is free
  EXPECT_EQ(c.error, AcquireError::kBusy);
  EXPECT_EQ(StateOf(router, "b"), ModelState::kLoaded);
}

TEST(ModelRouter, IdleModelsAreUnloadedAfterIdleUnloadSeconds) {
  testing::SimEnv sim;
  RecordingLoader loader;
  ModelRouter::Options o;
  o.idle_unload_s = 60;
  o.env = &sim;
  ModelRouter router(Specs({"a", "b"}), &loader, o);
  ASSERT_TRUE(router.Acquire("a").ok());
  ASSERT_TRUE(sim.AwaitWaiters(1));  // the reaper waits for a's expiry
  sim.AdvanceSeconds(30);
  Acquired b = router.Acquire("b");  // b is used at 30 s and kept in use
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.AdvanceSeconds(29);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(StateOf(router, "a"), ModelState::kLoaded);  // 59 s idle
  for (ModelLease& l : router.LeaseLoaded()) l.Release();  // monitoring reads are not uses
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.AdvanceSeconds(2);
  ASSERT_TRUE(AwaitState(router, "a", ModelState::kUnloaded));
  EXPECT_EQ(router.stats().idle_unloads, 1u);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.AdvanceSeconds(120);  // b is held: never idle while a request uses it
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(StateOf(router, "b"), ModelState::kLoaded);
  b.lease.Release();  // idle from now
  ASSERT_TRUE(sim.AwaitWaiters(1));
  sim.AdvanceSeconds(59);
  ASSERT_TRUE(sim.AwaitWaiters(1));
  EXPECT_EQ(StateOf(router, "b"), ModelState::kLoaded);
  sim.AdvanceSeconds(1);
  ASSERT_TRUE(AwaitState(router, "b", ModelState::kUnloaded));
  EXPECT_EQ(loader.log.events(),
            (std::vector<std::string>{"load a 0", "load b 0", "flush a", "free a", "flush b", "free b"}));
  ASSERT_TRUE(router.Acquire("a").ok());  // and it loads again on demand
  EXPECT_EQ(loader.loads.load(), 3);
}

TEST(ModelRouter, DrainStopsLoadingAndFlushAllFlushesEachLoadedModel) {
  RecordingLoader loader;
  ModelRouter router(Specs({"a", "b", "c"}), &loader, {});
  ASSERT_TRUE(router.Acquire("a").ok());
  ASSERT_TRUE(router.Acquire("b").ok());
  router.Drain(milliseconds(0));
  EXPECT_EQ(router.Acquire("c").error, AcquireError::kStopping);
  ASSERT_TRUE(router.FlushAll().ok());
  const std::vector<std::string> events = loader.log.events();
  EXPECT_EQ(std::count(events.begin(), events.end(), "flush a"), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), "flush b"), 1);
}

TEST(ModelRouter, DrainWaitsForALoadInProgress) {
  RecordingLoader loader;
  ModelRouter router(Specs({"a"}), &loader, {});
  loader.Close();
  std::thread client([&] { EXPECT_TRUE(router.Acquire("a").ok()); });
  loader.AwaitBlockedLoads(1);
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    router.Drain(milliseconds(0));
    drained = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(drained.load());
  loader.Open();
  client.join();
  drainer.join();
  EXPECT_TRUE(drained.load());
}

}  // namespace
}  // namespace ember::server
