// `ember h2h` end to end on a tiny generated model (a few MB, milliseconds per token), N = 2 rounds: the
// real binary, the real llama.cpp peer (node + node-llama-cpp), a real eval DB. It checks the plumbing
// and the rows' contents, never a speed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/eval_db.h"
#include "bench/served_bench.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

namespace fs = std::filesystem;

const std::string kEmber = std::string(EMBER_BINARY_DIR) + "/ember";

class H2hEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("h2h_e2e_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = (dir_ / "tiny-llama3.gguf").string();
    auto r = RunProcess({kEmber, "gen-model", "--out", model_, "--n-layer", "2", "--n-embd", "64", "--n-head", "2",
                         "--n-head-kv", "2", "--n-ff", "128", "--ctx", "1024", "--seed", "3"},
                        300);
    gen_ok_ = r.ok() && r->exit_code == 0;
    gen_err_ = r.ok() ? r->err : r.status().ToString();
    // Every stack runs the same thread count. A `serve` without --threads runs its engine's default, so
    // the whole test uses that.
    if (gen_ok_ && !ProbeServeFlags(kEmber).threads) {
      auto server = ServerProcess::Start({kEmber, model_, 0, {}, 120});
      if (server.ok()) {
        threads_ = (*server)->EngineThreads().value_or(1);
        (void)(*server)->Stop(30);
      }
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kEmber)) << kEmber << " is not built (build the `ember` target first)";
    ASSERT_TRUE(gen_ok_) << gen_err_;
  }

  // Runs `ember h2h` with the common small shape; returns its JSON summary.
  nlohmann::json H2h(const std::vector<std::string>& more, const std::string& db, int* exit_code,
                     std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv = {kEmber, "h2h", model_, "--db", db, "--threads", std::to_string(threads_), "--pp", "32", "--tg", "8",
                                     "--rounds", "2", "--turns", "3", "--turn-tokens", "4", "--no-preflight", "--json"};
    argv.insert(argv.end(), more.begin(), more.end());
    ProcessOptions po;
    po.argv = argv;
    po.env = std::move(env);
    auto r = RunProcess(po, 900);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return {};
    *exit_code = r->exit_code;
    nlohmann::json j = nlohmann::json::parse(r->out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r->out << r->err;
    if (*exit_code != 0) ADD_FAILURE() << r->out << "\n" << r->err.substr(r->err.size() > 4000 ? r->err.size() - 4000 : 0);
    return j;
  }

  static std::vector<EvalRow> Rows(const std::string& db, const std::string& leg, const std::string& stack) {
    auto d = EvalDb::Open(db);
    EXPECT_TRUE(d.ok());
    EvalFilter f;
    f.leg = leg;
    f.stack = stack;
    auto rows = (*d)->List(f);
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? *rows : std::vector<EvalRow>{};
  }

  static inline fs::path dir_;
  static inline std::string model_;
  static inline bool gen_ok_ = false;
  static inline int threads_ = 1;
  static inline std::string gen_err_;
};

TEST_F(H2hEndToEnd, DirectAndServedLegsBothStacksResumable) {
  const std::string db = (dir_ / "direct_served.sqlite").string();
  int rc = -1;
  nlohmann::json s = H2h({"--legs", "direct,served"}, db, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(s["stored"], 3);   // direct x 2 stacks, served x ember
  EXPECT_EQ(s["skipped"], 1);  // served x llama.cpp: n/a
  EXPECT_EQ(s["failed"], 0);

  auto ember_direct = Rows(db, "direct", "ember");
  auto peer_direct = Rows(db, "direct", "llama.cpp");
  ASSERT_EQ(ember_direct.size(), 1u);
  ASSERT_EQ(peer_direct.size(), 1u);
  for (const EvalRow* r : {&ember_direct[0], &peer_direct[0]}) {
    EXPECT_GT(r->decode_tok_s.value_or(0), 0) << r->stack;
    EXPECT_GT(r->prefill_tok_s.value_or(0), 0) << r->stack;
    EXPECT_GE(r->n_runs.value_or(0), 2) << r->stack;
    EXPECT_EQ(r->prompt_tokens, 32);
    EXPECT_EQ(r->threads, threads_);
  }
  EXPECT_EQ(peer_direct[0].stack_version, "3.21.1");
  EXPECT_EQ(ember_direct[0].model_hash, peer_direct[0].model_hash);

  auto served = Rows(db, "served", "ember");
  ASSERT_EQ(served.size(), 1u);
  EXPECT_GT(served[0].ready_ms.value_or(0), 0);
  EXPECT_GT(served[0].ttft_ms.value_or(0), 0);
  EXPECT_GT(served[0].decode_tok_s.value_or(0), 0);
  auto samples = nlohmann::json::parse(served[0].samples);
  ASSERT_GE(samples.size(), 2u);
  EXPECT_EQ(samples[0]["raw"]["completion_tokens"], 9);  // tg + 1: the first token comes out of prefill
  EXPECT_EQ(samples[0]["raw"]["prompt_tokens"], 32);
  auto na = Rows(db, "served", "llama.cpp");
  ASSERT_EQ(na.size(), 1u);
  EXPECT_EQ(na[0].tag, "n/a");
  EXPECT_NE(na[0].samples.find("HTTP server"), std::string::npos);

  // Resumable: a second run measures nothing.
  nlohmann::json again = H2h({"--legs", "direct,served"}, db, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(again["stored"], 0);
  EXPECT_EQ(again["skipped"], 4);

  // And the report renders every leg.
  const std::string md = (dir_ / "report.md").string();
  auto rep = RunProcess({kEmber, "report", "--db", db, "--out", md}, 120);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->exit_code, 0) << rep->err;
  std::ifstream in(md);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## served leg"), std::string::npos);
  EXPECT_NE(text.find("n/a: node-llama-cpp has no HTTP server"), std::string::npos);
}

TEST_F(H2hEndToEnd, CacheLegsPerTurnRows) {
  const std::string db = (dir_ / "cache.sqlite").string();
  int rc = -1;
  // ember: all three cache legs; the peer: the warm leg (its restore leg costs a node start per turn).
  nlohmann::json s = H2h({"--stacks", "ember", "--legs", "cache-warm,cache-cold,cache-restore"}, db, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(s["failed"], 0) << s.dump();
  nlohmann::json p = H2h({"--stacks", "llama.cpp", "--legs", "cache-warm"}, db, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(p["stored"], 1);

  for (const char* stack : {"ember", "llama.cpp"}) {
    auto warm = Rows(db, "cache-warm", stack);
    ASSERT_EQ(warm.size(), 3u) << stack;  // one row per turn
    for (size_t k = 0; k < warm.size(); ++k) {
      EXPECT_EQ(warm[k].turn, static_cast<int64_t>(k + 1));
      EXPECT_GT(warm[k].ttft_ms.value_or(0), 0);
      if (k > 0) {
        EXPECT_GT(warm[k].prompt_tokens.value_or(0), warm[k - 1].prompt_tokens.value_or(0));
        EXPECT_GT(warm[k].cached_tokens.value_or(0), 0) << stack << " turn " << k + 1 << " reused nothing";
      }
    }
  }
  // Both stacks were fed the same conversation ids.
  EXPECT_EQ(Rows(db, "cache-warm", "ember")[2].prompt_tokens, Rows(db, "cache-warm", "llama.cpp")[2].prompt_tokens);

  auto cold = Rows(db, "cache-cold", "ember");
  ASSERT_EQ(cold.size(), 3u);
  for (const auto& r : cold) EXPECT_EQ(r.cached_tokens, 0) << "turn " << *r.turn;

  // The SSD tier is part of every build: a `serve` without --ssd-cache fails here instead of passing
  // through h2h's "no ssd tier" skip.
  ASSERT_TRUE(ProbeServeFlags(kEmber).ssd_cache) << kEmber << " serve --help lists no --ssd-cache: the SSD tier is missing";
  auto restore = Rows(db, "cache-restore", "ember");
  ASSERT_EQ(restore.size(), 3u);
  EXPECT_GT(restore[2].cached_tokens.value_or(0), 0) << "the last turn after a restart restored nothing";
}

// The load legs' plumbing without a native build: the "llama-server" is a script that runs `ember serve`
// on the port and model llama-server is given (llama-server itself is never needed by `make test`).
TEST_F(H2hEndToEnd, LoadLegsBothStacksThroughTheSameClient) {
  const std::string fake = (dir_ / "fake-llama-server").string();
  {
    std::ofstream f(fake);
    f << "#!/usr/bin/env bash\n"
         "# Stands in for llama-server: ember serve on the port, model and threads llama-server is given.\n"
         "model= port= threads=\n"
         "while [ $# -gt 0 ]; do case \"$1\" in -m) model=$2; shift 2;; --port) port=$2; shift 2;;\n"
         "  -t) threads=$2; shift 2;; --version) echo 'version: 0 (fake)' >&2; exit 0;; *) shift;; esac; done\n"
         "exec \"" << kEmber << "\" serve \"$model\" --host 127.0.0.1 --port \"$port\" --threads \"$threads\" --no-ssd-cache\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  const std::string db = (dir_ / "load.sqlite").string();
  const std::vector<std::string> shape = {"--legs", "concurrency,agents", "--clients", "1,2", "--client-tokens", "8",
                                          "--client-prompt", "16", "--agents", "2", "--agent-turns", "2",
                                          "--agent-tokens", "4", "--preamble-tokens", "200"};
  std::vector<std::string> args = {"--stacks", "ember,llama-server,llama.cpp", "--llama-server", fake};
  args.insert(args.end(), shape.begin(), shape.end());
  int rc = -1;
  nlohmann::json s = H2h(args, db, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(s["stored"], 4);   // 2 legs x ember, llama-server
  EXPECT_EQ(s["skipped"], 2);  // llama.cpp (node): n/a, no HTTP server
  for (const char* stack : {"ember", "llama-server"}) {
    auto conc = Rows(db, "concurrency", stack);
    ASSERT_EQ(conc.size(), 2u) << stack;  // one row per client count
    for (size_t k = 0; k < conc.size(); ++k) {
      EXPECT_EQ(conc[k].clients, static_cast<int64_t>(k + 1));
      EXPECT_GT(conc[k].decode_tok_s.value_or(0), 0);
      EXPECT_GE(conc[k].ttft_p95_ms.value_or(-1), conc[k].ttft_ms.value_or(0));
      auto samples = nlohmann::json::parse(conc[k].samples);
      ASSERT_GE(samples.size(), 2u);
      const auto& reqs = samples[0]["raw"]["requests"];
      ASSERT_EQ(reqs.size(), k + 1);
      for (const auto& q : reqs) {
        EXPECT_EQ(q["completion_tokens"], 8) << stack;  // exactly the asked length: EOG ids banned
        EXPECT_EQ(q["prompt_tokens"], 16);
      }
    }
    auto agents = Rows(db, "agents", stack);
    ASSERT_EQ(agents.size(), 1u);
    EXPECT_EQ(agents[0].clients, 2);
    EXPECT_GT(agents[0].wall_ms.value_or(0), 0);
    EXPECT_GT(agents[0].prompt_tokens.value_or(0), 2 * 2 * 150);  // 4 requests, each over the ~200-token preamble
    // ember's prefix cache serves the shared preamble and each agent's own history after its first turn.
    EXPECT_GT(agents[0].cached_tokens.value_or(0), 0) << stack;
  }
  auto na = Rows(db, "concurrency", "llama.cpp");
  ASSERT_EQ(na.size(), 1u);
  EXPECT_EQ(na[0].tag, "n/a");

  // Not built (an empty peer folder, no --llama-server): the cell is n/a with the way to build it.
  const std::string db2 = (dir_ / "load-na.sqlite").string();
  std::vector<std::string> only = {"--stacks", "llama-server"};
  only.insert(only.end(), shape.begin(), shape.end());
  nlohmann::json n = H2h(only, db2, &rc, {{"EMBER_PEER_DIR", (dir_ / "no-peer").string()}});
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(n["skipped"], 2);
  auto unbuilt = Rows(db2, "concurrency", "llama-server");
  ASSERT_EQ(unbuilt.size(), 1u);
  EXPECT_EQ(unbuilt[0].tag, "n/a");
  EXPECT_NE(unbuilt[0].samples.find("native llama-server not built (scripts/build-peer)"), std::string::npos);
}

}  // namespace
}  // namespace ember::bench
