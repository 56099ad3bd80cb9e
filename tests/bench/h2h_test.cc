#include "bench/h2h.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "support/sim_env.h"

namespace ember::bench {
namespace {

namespace fs = std::filesystem;

// A stack that returns scripted decode speeds (prefill fixed) and logs every call in a shared journal.
class FakeStack : public StackRunner {
 public:
  FakeStack(std::string name, std::vector<std::string>* journal, std::deque<double> decode)
      : name_(std::move(name)), journal_(journal), decode_(std::move(decode)) {}
  std::string name() const override { return name_; }
  bool Supports(Leg leg) const override { return leg == Leg::kDirect; }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    journal_->push_back(name_);
    last_tokens = req.tokens;
    if (fail_after >= 0 && calls_++ >= fail_after) return Internal(name_ + " crashed");
    if (decode_.empty()) return Internal(name_ + ": script exhausted");
    RunMeasurement m;
    m.prefill_tok_s = 300;
    m.decode_tok_s = decode_.front();
    decode_.pop_front();
    m.peak_rss_bytes = 100 << 20;
    m.version = name_ == "ember" ? std::nullopt : std::optional<std::string>("3.21.1");
    m.variant = name_ == "ember" ? std::nullopt : std::optional<std::string>("libggml-cpu-zen4.so");
    if (name_ == "ember") m.arch = "llama", m.dtype = "Q8_0", m.params = 600000000;
    return m;
  }
  std::vector<int32_t> last_tokens;
  int fail_after = -1;

 private:
  std::string name_;
  std::vector<std::string>* journal_;
  std::deque<double> decode_;
  int calls_ = 0;
};

class H2hTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("h2h_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = (dir_ / "tiny.gguf").string();
    std::ofstream(model_) << "GGUF tiny model";
    auto db = EvalDb::Open((dir_ / "evals.sqlite").string());
    ASSERT_TRUE(db.ok());
    db_ = std::move(db).value();
    cfg_.models = {model_};
    cfg_.threads = 2;
    cfg_.prompt_tokens = 8;
    cfg_.gen_tokens = 4;
    cfg_.rounds = 3;
  }
  void TearDown() override { fs::remove_all(dir_); }

  H2hEnv Env(std::vector<StackRunner*> stacks) {
    H2hEnv env;
    env.stacks = std::move(stacks);
    env.db = db_.get();
    env.tokenize = [this](const std::string&, int n) -> StatusOr<std::vector<int32_t>> {
      ++tokenize_calls_;
      std::vector<int32_t> ids;
      for (int i = 0; i < n; ++i) ids.push_back(100 + i);
      return ids;
    };
    env.preflight = [this]() {
      ++preflights_;
      return PreflightSnapshot{preflight_ok_, {{"ok", preflight_ok_}}};
    };
    env.clock = &clock_;
    env.revision = {"c0ffee", false};
    return env;
  }

  ember::testing::SimEnv clock_;  // created_at and the progress bar's clock
  fs::path dir_;
  std::string model_;
  std::unique_ptr<EvalDb> db_;
  H2hConfig cfg_;
  std::vector<std::string> journal_;
  int tokenize_calls_ = 0, preflights_ = 0;
  bool preflight_ok_ = true;
};

TEST_F(H2hTest, InterleavesAfterWarmupAndStoresOneRowPerStack) {
  FakeStack ember("ember", &journal_, {999, 50, 51, 50.5});  // 999: the discarded warm-up
  FakeStack peer("llama.cpp", &journal_, {1, 40, 40.5, 41});
  H2hEnv env = Env({&ember, &peer});
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->stored, 2);
  EXPECT_EQ(journal_, (std::vector<std::string>{"ember", "llama.cpp", "ember", "llama.cpp", "ember", "llama.cpp",
                                                "ember", "llama.cpp"}));
  EXPECT_EQ(tokenize_calls_, 1);
  EXPECT_EQ(preflights_, 2);  // before and after the leg
  EXPECT_EQ(ember.last_tokens, peer.last_tokens);
  EXPECT_EQ(ember.last_tokens.size(), 8u);
  auto rows = db_->List({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  const EvalRow& e = (*rows)[0];
  EXPECT_EQ(e.stack, "ember");
  EXPECT_DOUBLE_EQ(*e.decode_tok_s, 50.5);  // median of the measured rounds; warm-up excluded
  EXPECT_EQ(e.tag, "stable");
  EXPECT_EQ(e.n_runs, 3);
  EXPECT_EQ(e.ember_commit, "c0ffee");
  EXPECT_EQ(e.stack_version, "c0ffee");
  EXPECT_EQ(e.prompt_tokens, 8);
  EXPECT_TRUE(*e.preflight_ok);
  EXPECT_NE(e.machine_state.find("\"before\""), std::string::npos);
  EXPECT_EQ(e.model_hash, *db_->ModelHash(model_));
  const EvalRow& p = (*rows)[1];
  EXPECT_EQ(p.stack_version, "3.21.1");
  EXPECT_EQ(p.stack_variant, "libggml-cpu-zen4.so");
  EXPECT_EQ(p.arch, "llama");  // model identity shared from ember's report
  auto samples = nlohmann::json::parse(p.samples);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_DOUBLE_EQ(samples[0]["decode_tok_s"].get<double>(), 40);
}

TEST_F(H2hTest, ResumeSkipsStoredCellsUnlessRedo) {
  FakeStack ember("ember", &journal_, {50, 50, 50, 50, 50, 50, 50, 50});
  FakeStack peer("llama.cpp", &journal_, {40, 40, 40, 40, 40, 40, 40, 40});
  H2hEnv env = Env({&ember, &peer});
  ASSERT_EQ(RunH2h(cfg_, env)->stored, 2);
  journal_.clear();
  auto again = RunH2h(cfg_, env);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->skipped, 2);
  EXPECT_TRUE(journal_.empty());
  EXPECT_EQ(tokenize_calls_, 1);  // nothing to run, nothing tokenized
  cfg_.redo = true;
  EXPECT_EQ(RunH2h(cfg_, env)->stored, 2);
  EXPECT_EQ(db_->List({})->size(), 4u);
}

TEST_F(H2hTest, NoisyCellGetsExtraRoundsAndIsTagged) {
  // ember: 50, 30, 50.5 -> spread 1.68 -> extra 50.2 -> fastest three agree: stabilized.
  FakeStack ember("ember", &journal_, {50, 50, 30, 50.5, 50.2});
  // peer: wildly noisy, never settles within 3 extra rounds.
  FakeStack peer("llama.cpp", &journal_, {40, 40, 20, 30, 25, 35, 22});
  H2hEnv env = Env({&ember, &peer});
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->cells.size(), 2u);
  EXPECT_EQ(s->cells[0].tag, StabilityTag::kStabilized);
  EXPECT_EQ(s->cells[1].tag, StabilityTag::kUnstable);
  auto rows = *db_->List({});
  EXPECT_EQ(rows[0].n_runs, 4);
  EXPECT_DOUBLE_EQ(*rows[0].decode_tok_s, 50.2);
  EXPECT_EQ(rows[1].n_runs, 6);
  EXPECT_EQ(rows[1].tag, "unstable");
  auto samples = nlohmann::json::parse(rows[0].samples);
  EXPECT_TRUE(samples[3]["extra"].get<bool>());
}

TEST_F(H2hTest, PreflightFailureIsTaggedNotDropped) {
  preflight_ok_ = false;
  FakeStack ember("ember", &journal_, {50, 50, 50, 50});
  H2hEnv env = Env({&ember});
  ASSERT_EQ(RunH2h(cfg_, env)->stored, 1);
  EXPECT_FALSE(*(*db_->List({}))[0].preflight_ok);
}

TEST_F(H2hTest, FailingStackFailsOnlyItsCell) {
  FakeStack ember("ember", &journal_, {50, 50, 50, 50});
  FakeStack peer("llama.cpp", &journal_, {40, 40, 40, 40});
  peer.fail_after = 2;  // warm-up and round 1 succeed, round 2 crashes
  H2hEnv env = Env({&ember, &peer});
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->stored, 1);
  EXPECT_EQ(s->failed, 1);
  EXPECT_NE(s->cells[1].status.find("crashed"), std::string::npos);
  // After the crash the peer is not called again.
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "llama.cpp"), 3);
}

TEST_F(H2hTest, UnimplementedLegsAreSkippedWithAReason) {
  FakeStack ember("ember", &journal_, {50, 50, 50, 50});
  cfg_.legs = {Leg::kServed, Leg::kDirect, Leg::kCacheWarm};
  H2hEnv env = Env({&ember});
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->stored, 1);
  EXPECT_EQ(s->skipped, 2);
  EXPECT_NE(s->cells[0].status.find("served not implemented"), std::string::npos);
  auto j = H2hSummaryToJson(*s);
  EXPECT_EQ(j["cells"].size(), 3u);
}

TEST_F(H2hTest, MissingModelAndBadConfigAreErrorsNotCrashes) {
  FakeStack ember("ember", &journal_, {50});
  H2hEnv env = Env({&ember});
  cfg_.models = {(dir_ / "missing.gguf").string()};
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->failed, 1);
  EXPECT_TRUE(journal_.empty());
  cfg_.rounds = 0;
  EXPECT_FALSE(RunH2h(cfg_, env).ok());
  H2hEnv empty = Env({});
  cfg_.rounds = 3;
  EXPECT_FALSE(RunH2h(cfg_, empty).ok());
}

TEST_F(H2hTest, ProgressCountsEveryRoundIncludingExtras) {
  FakeStack ember("ember", &journal_, {50, 50, 30, 50.5, 50.2});
  H2hEnv env = Env({&ember});
  ProgressBar progress("h2h", 1 * (3 + 1), {.enabled = false, .out = nullptr, .env = &clock_});
  env.progress = &progress;
  ASSERT_TRUE(RunH2h(cfg_, env).ok());
  EXPECT_EQ(progress.done(), 5);
  EXPECT_EQ(progress.total(), 5);
}

// A stack for the served and cache legs: per-turn TTFTs grow with the turn (cold) or stay flat (warm);
// it cannot run the served leg and says so with an n/a reason.
class TurnStack : public StackRunner {
 public:
  explicit TurnStack(std::string name, bool serves) : name_(std::move(name)), serves_(serves) {}
  std::string name() const override { return name_; }
  bool Supports(Leg leg) const override { return IsCacheLeg(leg) || (leg == Leg::kServed && serves_); }
  std::string SkipReason(Leg leg) const override {
    return leg == Leg::kServed ? "n/a: this stack has no server" : StackRunner::SkipReason(leg);
  }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    ++calls;
    seen_turns = req.turns;
    RunMeasurement m;
    if (leg == Leg::kServed) {
      m.ttft_ms = 20 + calls % 2;
      m.decode_tok_s = 40;
      m.ready_ms = 300;
      return m;
    }
    for (size_t k = 0; k < req.turns.size(); ++k) {
      const int turn = static_cast<int>(k + 1);
      const bool warm = leg == Leg::kCacheWarm;
      // Turn 2 of the warm leg is noisy in round 2 (call 3, after the warm-up): an extra round settles it.
      double ttft = warm ? 10.0 + turn : 100.0 * turn;
      if (warm && turn == 2 && calls == 3) ttft *= 3;
      m.turns.push_back({turn, ttft, static_cast<int64_t>(req.turns[k].size()),
                         warm && k > 0 ? static_cast<int64_t>(req.turns[k - 1].size()) : 0, warm ? "ram" : "none"});
    }
    m.ttft_ms = m.turns.back().ttft_ms;
    return m;
  }
  int calls = 0;
  std::vector<std::vector<int32_t>> seen_turns;

 private:
  std::string name_;
  bool serves_;
};

TEST_F(H2hTest, CacheLegsStoreOneRowPerTurnWithCachedTokens) {
  TurnStack ember("ember", true);
  H2hEnv env = Env({&ember});
  int conversations = 0;
  env.conversation = [&conversations](const std::string&, int turns) -> StatusOr<std::vector<std::vector<int32_t>>> {
    ++conversations;
    std::vector<std::vector<int32_t>> t;
    for (int k = 1; k <= turns; ++k) t.push_back(std::vector<int32_t>(static_cast<size_t>(10 * k), 7));
    return t;
  };
  cfg_.legs = {Leg::kCacheWarm, Leg::kCacheCold};
  cfg_.turns = 3;
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->stored, 2);
  EXPECT_EQ(conversations, 1);  // once per model, shared by the legs
  ASSERT_EQ(ember.seen_turns.size(), 3u);
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 6u);  // 2 legs x 3 turns
  const EvalRow& warm2 = rows[1];
  EXPECT_EQ(warm2.leg, "cache-warm");
  EXPECT_EQ(warm2.turn, 2);
  EXPECT_EQ(warm2.prompt_tokens, 20);
  EXPECT_EQ(warm2.cached_tokens, 10);
  EXPECT_DOUBLE_EQ(*warm2.ttft_ms, 12);
  EXPECT_EQ(warm2.tag, "stabilized");  // 36 ms in one round: extra round, fast cluster agrees
  EXPECT_EQ(rows[0].tag, "stable");
  EXPECT_EQ(rows[0].n_runs, 4);
  auto samples = nlohmann::json::parse(warm2.samples);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0]["tier"], "ram");
  EXPECT_EQ(samples[0]["cached_tokens"], 10);
  const EvalRow& cold3 = rows[5];
  EXPECT_EQ(cold3.leg, "cache-cold");
  EXPECT_EQ(cold3.turn, 3);
  EXPECT_EQ(cold3.cached_tokens, 0);
  EXPECT_DOUBLE_EQ(*cold3.ttft_ms, 300);
  // Resumable: the turn rows count as the cell.
  auto again = RunH2h(cfg_, env);
  EXPECT_EQ(again->skipped, 2);
}

TEST_F(H2hTest, ServedLegStoresReadyTimeAndAnNaRowForAStackWithoutAServer) {
  TurnStack ember("ember", true);
  TurnStack peer("llama.cpp", false);
  H2hEnv env = Env({&ember, &peer});
  cfg_.legs = {Leg::kServed};
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->stored, 1);
  EXPECT_EQ(s->skipped, 1);
  EXPECT_EQ(peer.calls, 0);
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].stack, "llama.cpp");  // stored when skipped, before the leg ran
  EXPECT_EQ(rows[0].tag, "n/a");
  EXPECT_NE(rows[0].samples.find("no server"), std::string::npos);
  EXPECT_DOUBLE_EQ(*rows[1].ready_ms, 300);
  EXPECT_DOUBLE_EQ(*rows[1].decode_tok_s, 40);
  EXPECT_TRUE(rows[1].ttft_ms.has_value());
  // The n/a row makes the cell resumable like any other.
  auto again = RunH2h(cfg_, env);
  EXPECT_EQ(again->skipped, 2);
  EXPECT_EQ(db_->List({})->size(), 2u);
}

TEST_F(H2hTest, CacheLegWithoutConversationFailsItsCellsOnly) {
  TurnStack ember("ember", true);
  H2hEnv env = Env({&ember});
  cfg_.legs = {Leg::kCacheWarm, Leg::kServed};
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->failed, 1);
  EXPECT_EQ(s->stored, 1);
  EXPECT_NE(s->cells[0].status.find("conversation"), std::string::npos);
  env.conversation = [](const std::string&, int) -> StatusOr<std::vector<std::vector<int32_t>>> {
    return Internal("template broke");
  };
  auto again = RunH2h(cfg_, env);
  EXPECT_NE(again->cells[0].status.find("template broke"), std::string::npos);
  EXPECT_EQ(ember.calls, 4);  // only the served leg ran: warm-up + 3 rounds
}

// A stack for the load legs: per level, aggregate tok/s = base * clients (scripted per round), TTFT
// p50 10 ms * clients and p95 twice that; agents: wall 1000 ms per round, recomputed tokens if it says.
class LoadStack : public StackRunner {
 public:
  LoadStack(std::string name, std::vector<std::string>* journal, std::deque<double> base, bool says_recomputed = true)
      : name_(std::move(name)), journal_(journal), base_(std::move(base)), says_(says_recomputed) {}
  std::string name() const override { return name_; }
  bool Supports(Leg leg) const override { return IsLoadLeg(leg); }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    journal_->push_back(name_);
    seen = req;
    if (base_.empty()) return Internal(name_ + ": script exhausted");
    const double b = base_.front();
    base_.pop_front();
    RunMeasurement m;
    const std::vector<int> levels = leg == Leg::kAgents ? std::vector<int>{req.agents} : req.clients;
    for (int c : levels) {
      LoadMeasurement l;
      l.clients = c;
      l.requests = leg == Leg::kAgents ? c * req.agent_turns : c;
      l.aggregate_tok_s = b * c;
      l.ttft_p50_ms = 10.0 * c;
      l.ttft_p95_ms = 20.0 * c;
      l.wall_ms = leg == Leg::kAgents ? 1000 * 50 / b : 96.0 * c / l.aggregate_tok_s * 1000;
      l.prompt_tokens = leg == Leg::kAgents ? 6000 : 64 * c;
      l.completion_tokens = 96 * c;
      l.recomputed_tokens = says_ ? (leg == Leg::kAgents ? 1800 : 64 * c - c) : -1;
      l.raw = {{"clients", c}};
      m.levels.push_back(l);
    }
    m.peak_rss_bytes = 1 << 20;
    return m;
  }
  BenchRequest seen;

 private:
  std::string name_;
  std::vector<std::string>* journal_;
  std::deque<double> base_;
  bool says_;
};

TEST_F(H2hTest, ConcurrencyLegStoresOneRowPerLevelWithMediansAndP95) {
  LoadStack ember("ember", &journal_, {999, 40, 41, 40.5});  // 999: the discarded warm-up
  LoadStack peer("llama-server", &journal_, {1, 30, 30.5, 31});
  H2hEnv env = Env({&ember, &peer});
  cfg_.legs = {Leg::kConcurrency};
  cfg_.clients = {1, 2, 8};
  cfg_.client_gen_tokens = 96;
  cfg_.client_prompt_tokens = 64;
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->stored, 2);
  EXPECT_EQ(journal_, (std::vector<std::string>{"ember", "llama-server", "ember", "llama-server", "ember",
                                                "llama-server", "ember", "llama-server"}));
  EXPECT_EQ(ember.seen.clients, (std::vector<int>{1, 2, 8}));
  EXPECT_EQ(ember.seen.client_gen_tokens, 96);
  EXPECT_EQ(ember.seen.tokens, peer.seen.tokens);  // the same ids for both stacks
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 6u);  // 2 stacks x 3 levels
  const EvalRow& e8 = rows[2];
  EXPECT_EQ(e8.stack, "ember");
  EXPECT_EQ(e8.leg, "concurrency");
  EXPECT_EQ(e8.clients, 8);
  EXPECT_DOUBLE_EQ(*e8.decode_tok_s, 40.5 * 8);  // median of the measured rounds; warm-up excluded
  EXPECT_DOUBLE_EQ(*e8.ttft_ms, 80);
  EXPECT_DOUBLE_EQ(*e8.ttft_p95_ms, 160);
  EXPECT_EQ(e8.prompt_tokens, 64);
  EXPECT_EQ(e8.gen_tokens, 96);
  EXPECT_EQ(e8.cached_tokens, 8);  // 8 x 64 sent, 8 x 63 computed
  EXPECT_EQ(e8.n_runs, 3);
  EXPECT_EQ(e8.tag, "stable");
  EXPECT_EQ(nlohmann::json::parse(e8.samples).size(), 3u);
  EXPECT_EQ(rows[3].stack, "llama-server");
  EXPECT_EQ(rows[3].clients, 1);
  EXPECT_DOUBLE_EQ(*rows[3].decode_tok_s, 30.5);
  // The summary carries every level's figures for the text report and --json.
  auto j = H2hSummaryToJson(*s);
  ASSERT_EQ(j["cells"][0]["figures"].size(), 3u);
  EXPECT_EQ(j["cells"][0]["figures"][2]["clients"], 8);
  EXPECT_DOUBLE_EQ(j["cells"][0]["figures"][2]["ttft_p95_ms"].get<double>(), 160);
  // Resumable like any cell.
  journal_.clear();
  EXPECT_EQ(RunH2h(cfg_, env)->skipped, 2);
  EXPECT_TRUE(journal_.empty());
}

TEST_F(H2hTest, NoisyLevelIsTaggedOnItsOwnRow) {
  // Level 2's TTFT is fixed, its aggregate as noisy as the base: 40, 20, 40.2 -> extra 40.1 -> stabilized.
  LoadStack ember("ember", &journal_, {40, 40, 20, 40.2, 40.1});
  H2hEnv env = Env({&ember});
  cfg_.legs = {Leg::kConcurrency};
  cfg_.clients = {2};
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cells[0].tag, StabilityTag::kStabilized);
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tag, "stabilized");
  EXPECT_EQ(rows[0].n_runs, 4);
  EXPECT_DOUBLE_EQ(*rows[0].decode_tok_s, 80.2);  // the median of the three fast rounds, x 2 clients
}

TEST_F(H2hTest, AgentsLegStoresWallTimeAndRecomputedTokensOrUnknown) {
  LoadStack ember("ember", &journal_, {50, 50, 50, 50});
  LoadStack peer("llama-server", &journal_, {25, 25, 25, 25}, /*says_recomputed=*/false);
  H2hEnv env = Env({&ember, &peer});
  cfg_.legs = {Leg::kAgents};
  cfg_.agents = 4;
  cfg_.agent_turns = 3;
  cfg_.agent_gen_tokens = 24;
  cfg_.preamble_tokens = 900;
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->stored, 2);
  EXPECT_EQ(ember.seen.agents, 4);
  EXPECT_EQ(ember.seen.agent_turns, 3);
  EXPECT_EQ(ember.seen.preamble_tokens, 900);
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].clients, 4);
  EXPECT_DOUBLE_EQ(*rows[0].wall_ms, 1000);
  EXPECT_DOUBLE_EQ(*rows[0].ttft_ms, 40);
  EXPECT_DOUBLE_EQ(*rows[0].ttft_p95_ms, 80);
  EXPECT_EQ(rows[0].prompt_tokens, 6000);
  EXPECT_EQ(rows[0].cached_tokens, 6000 - 1800);
  EXPECT_EQ(rows[0].gen_tokens, 24);
  EXPECT_DOUBLE_EQ(*rows[1].wall_ms, 2000);
  EXPECT_FALSE(rows[1].cached_tokens.has_value());  // the stack never said: unknown, not 0
  auto j = H2hSummaryToJson(*s);
  EXPECT_TRUE(j["cells"][1]["figures"][0]["recomputed_tokens"].is_null());
  EXPECT_EQ(j["cells"][0]["figures"][0]["recomputed_tokens"], 1800);
}

TEST_F(H2hTest, UnbuiltPeerIsNotApplicableAndABuiltOneSupersedesThatRow) {
  auto unbuilt = MakeLlamaServerRunner({"", {}, 10});
  LoadStack ember("ember", &journal_, {50, 50, 50, 50, 50, 50, 50, 50});
  H2hEnv env = Env({&ember, unbuilt.get()});
  cfg_.legs = {Leg::kConcurrency};
  cfg_.clients = {1};
  auto s = RunH2h(cfg_, env);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->stored, 1);
  EXPECT_EQ(s->skipped, 1);
  auto rows = *db_->List({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].stack, "llama-server");
  EXPECT_EQ(rows[0].tag, "n/a");
  EXPECT_NE(rows[0].samples.find("native llama-server not built (scripts/build-peer)"), std::string::npos);
  // Still unbuilt: the n/a row stands, nothing is measured or stored again.
  EXPECT_EQ(RunH2h(cfg_, env)->skipped, 2);
  EXPECT_EQ(db_->List({})->size(), 2u);
  // Built now: its cell is measured although an n/a row exists for it; ember's stays skipped.
  LoadStack built("llama-server", &journal_, {30, 30, 30, 30});
  H2hEnv env2 = Env({&ember, &built});
  journal_.clear();
  auto again = RunH2h(cfg_, env2);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 1);
  EXPECT_EQ(again->skipped, 1);
  EXPECT_EQ(journal_, (std::vector<std::string>(4, "llama-server")));
  EXPECT_EQ(RunH2h(cfg_, env2)->skipped, 2);  // and from then on it is resumable
}

TEST_F(H2hTest, LoadLegConfigIsValidated) {
  LoadStack ember("ember", &journal_, {50});
  H2hEnv env = Env({&ember});
  cfg_.legs = {Leg::kConcurrency};
  cfg_.clients = {};
  EXPECT_FALSE(RunH2h(cfg_, env).ok());
  cfg_.clients = {1, 0};
  EXPECT_NE(RunH2h(cfg_, env).status().message().find("--clients"), std::string::npos);
  cfg_.clients = {1000};
  EXPECT_FALSE(RunH2h(cfg_, env).ok());
  cfg_.clients = {1};
  cfg_.legs = {Leg::kAgents};
  cfg_.agents = 0;
  EXPECT_FALSE(RunH2h(cfg_, env).ok());
  EXPECT_TRUE(journal_.empty());
}

TEST(StackJson, ParsesEmberAndPeerOutput) {
  auto e = ParseEmberBenchJson("loading...\n{\"prefill_tok_s\": 400.5, \"decode_tok_s\": 51, \"peak_rss_bytes\": 1048576}\n");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_DOUBLE_EQ(*e->prefill_tok_s, 400.5);
  EXPECT_EQ(e->peak_rss_bytes, 1048576);
  auto p = ParsePeerBenchJson(R"({"prompt_tokens":3,"prefill_tok_s":355,"decode_tok_s":38,"tokens":[1,2],)"
                              R"("peer":{"version":"3.21.1","cpu_variant":"libggml-cpu-zen4.so"}})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->version, "3.21.1");
  EXPECT_EQ(p->variant, "libggml-cpu-zen4.so");
  EXPECT_FALSE(p->raw.contains("tokens"));
  EXPECT_FALSE(ParsePeerBenchJson(R"({"error": "model file not found"})").ok());
  EXPECT_FALSE(ParseEmberBenchJson("not json").ok());
  EXPECT_FALSE(ParseEmberBenchJson("{}").ok());
}

TEST(Legs, NamesRoundTrip) {
  for (const auto& l : AllLegs()) EXPECT_EQ(ParseLeg(l.name), l.leg);
  EXPECT_FALSE(ParseLeg("warp"));
  EXPECT_EQ(MetricsForLeg(Leg::kCacheWarm)[0].spec.dir, Direction::kLowerIsFaster);
  EXPECT_EQ(MetricsForLeg(Leg::kCacheRestore, 10).size(), 10u);
  EXPECT_EQ(MetricsForLeg(Leg::kCacheRestore, 10)[9].turn, 10);
  EXPECT_EQ(MetricsForLeg(Leg::kServed).size(), 3u);
  EXPECT_TRUE(IsCacheLeg(Leg::kCacheCold));
  EXPECT_FALSE(IsCacheLeg(Leg::kServed));
  EXPECT_TRUE(IsLoadLeg(Leg::kAgents));
  EXPECT_EQ(ParseLeg("concurrency"), Leg::kConcurrency);
  auto c = MetricsForLeg(Leg::kConcurrency, 10, {1, 4});
  ASSERT_EQ(c.size(), 4u);  // aggregate tok/s and TTFT p50 per level
  EXPECT_EQ(c[2].spec.name, "aggregate_tok_s_c4");
  EXPECT_EQ(c[2].spec.dir, Direction::kHigherIsFaster);
  EXPECT_EQ(c[3].spec.dir, Direction::kLowerIsFaster);
  EXPECT_EQ(c[3].clients, 4);
  auto a = MetricsForLeg(Leg::kAgents, 10, {4});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].spec.name, "wall_ms");
}

TEST(StackJson, ParsesPeerConverseOutput) {
  auto c = ParsePeerConverseJson(R"({"mode":"warm","turns":[{"turn":1,"ttft_ms":90,"prompt_tokens":41,"cached_tokens":0},)"
                                 R"({"turn":2,"ttft_ms":20,"prompt_tokens":71,"cached_tokens":41}],)"
                                 R"("peer":{"version":"3.21.1","cpu_variant":"libggml-cpu-zen4.so"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->turns.size(), 2u);
  EXPECT_EQ(c->turns[1].cached_tokens, 41);
  EXPECT_DOUBLE_EQ(*c->ttft_ms, 20);
  EXPECT_EQ(c->version, "3.21.1");
  EXPECT_EQ(c->raw["arena"], "library");
  EXPECT_FALSE(ParsePeerConverseJson(R"({"turns": []})").ok());
  EXPECT_FALSE(ParsePeerConverseJson(R"({"error": "boom"})").ok());
}

}  // namespace
}  // namespace ember::bench

#include "bench/prompt_tokens.h"

namespace ember::bench {
namespace {

TEST(PromptTokens, StretchKeepsBosOnceAndCyclesTheRest) {
  EXPECT_EQ(StretchTokens({1, 5, 6, 7}, 9), (std::vector<int32_t>{1, 5, 6, 7, 5, 6, 7, 5, 6}));
  EXPECT_EQ(StretchTokens({1, 5, 6, 7}, 2), (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(StretchTokens({9}, 3), (std::vector<int32_t>{9, 9, 9}));
  EXPECT_TRUE(StretchTokens({}, 3).empty());
  EXPECT_TRUE(StretchTokens({1, 2}, 0).empty());
  EXPECT_GT(BenchPromptText().size(), 400u);
}

}  // namespace
}  // namespace ember::bench
