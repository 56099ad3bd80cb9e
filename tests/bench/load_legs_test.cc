// The load legs' client side (load_legs.h) and the native peer's command line (llama_server.h): pure
// figures on synthetic timings, and the one client against an in-process fake server that records
// what it was sent.
#include "bench/load_legs.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "bench/llama_server.h"
#include "support/poll.h"
#include "util/mutex.h"

namespace ember::bench {
namespace {

using nlohmann::json;

CompletionTiming Timing(double ttft, int prompt, int completion, int cached, bool reported, int prompt_n = -1) {
  CompletionTiming t;
  t.ttft_ms = ttft;
  t.prompt_tokens = prompt;
  t.completion_tokens = completion;
  t.cached_tokens = cached;
  t.cached_reported = reported;
  t.timings_prompt_n = prompt_n;
  return t;
}

TEST(LoadLegs, SummaryAggregatesPercentilesAndRecomputedTokens) {
  // Four clients of 96 tokens over 2 s: 192 tok/s; TTFT 10, 20, 30, 40 -> p50 25, p95 38.5 (type 7).
  std::vector<CompletionTiming> r = {Timing(40, 64, 96, 0, true), Timing(10, 64, 96, 1, true),
                                     Timing(30, 64, 96, 1, true), Timing(20, 64, 96, 1, true)};
  LoadMeasurement m = SummarizeLoad(4, r, 2000);
  EXPECT_EQ(m.clients, 4);
  EXPECT_EQ(m.requests, 4);
  EXPECT_EQ(m.completion_tokens, 384);
  EXPECT_DOUBLE_EQ(m.aggregate_tok_s, 192);
  EXPECT_DOUBLE_EQ(m.ttft_p50_ms, 25);
  EXPECT_DOUBLE_EQ(m.ttft_p95_ms, 38.5);
  EXPECT_EQ(m.prompt_tokens, 256);
  EXPECT_EQ(m.recomputed_tokens, 256 - 3);  // prompt - cached, from usage
  EXPECT_EQ(m.raw["requests"].size(), 4u);
  EXPECT_EQ(m.raw["requests"][0]["recomputed_from"], "usage.prompt_tokens_details.cached_tokens");
}

TEST(LoadLegs, RecomputedPrefersTimingsAndIsUnknownWhenAnyRequestIsSilent) {
  // llama-server's timings.prompt_n wins over usage (it counts what the slot really computed).
  LoadMeasurement a = SummarizeLoad(2, {Timing(5, 1400, 8, 0, true, 1400), Timing(5, 1400, 8, 1300, true, 100)}, 100);
  EXPECT_EQ(a.recomputed_tokens, 1500);
  EXPECT_EQ(a.raw["requests"][1]["recomputed_from"], "timings.prompt_n");
  // A request that said neither makes the whole level unknown, never a partial sum.
  LoadMeasurement b = SummarizeLoad(2, {Timing(5, 1400, 8, 0, true), Timing(5, 1400, 8, 0, false)}, 100);
  EXPECT_EQ(b.recomputed_tokens, -1);
  EXPECT_TRUE(b.raw["recomputed_tokens"].is_null());
  EXPECT_EQ(SummarizeLoad(1, {}, 0).aggregate_tok_s, 0);
}

TEST(LoadLegs, ClientPromptsShareOnlyTheFirstId) {
  std::vector<int32_t> base = {1};
  for (int i = 0; i < 40; ++i) base.push_back(100 + i);
  std::vector<std::vector<int32_t>> p;
  for (int c = 0; c < 8; ++c) p.push_back(ClientPrompt(base, c, 64));
  for (int c = 0; c < 8; ++c) {
    ASSERT_EQ(p[static_cast<size_t>(c)].size(), 64u);
    EXPECT_EQ(p[static_cast<size_t>(c)][0], 1);
    for (int d = 0; d < c; ++d) EXPECT_NE(p[static_cast<size_t>(c)][1], p[static_cast<size_t>(d)][1]) << c << " vs " << d;
  }
  EXPECT_EQ(ClientPrompt(base, 3, 64), p[3]);  // deterministic: the same ids for every stack and round
  // The warm-up request primes no client's prefix (llama-server's slots keep their last prompt).
  const auto warm = WarmupPrompt(base, 16);
  ASSERT_EQ(warm.size(), 16u);
  EXPECT_EQ(warm[0], 1);
  for (const auto& c : p) EXPECT_NE(warm[1], c[1]);
  EXPECT_TRUE(ClientPrompt({}, 0, 8).empty());
  EXPECT_EQ(ClientPrompt({7}, 2, 3), (std::vector<int32_t>{7, 7, 7}));
}

TEST(LoadLegs, AgentScriptSharesOnePreambleAndGivesEachAgentItsOwnRole) {
  AgentScript s = MakeAgentScript(10, 4, 1400);
  EXPECT_GE(s.preamble.size(), 1400u * 4);  // ~4.6 characters per token
  EXPECT_LE(s.preamble.size(), 1400u * 5);
  ASSERT_EQ(s.roles.size(), 10u);
  ASSERT_EQ(s.asks.size(), 10u);
  for (const auto& a : s.asks) EXPECT_EQ(a.size(), 4u);
  EXPECT_NE(s.roles[0], s.roles[1]);
  EXPECT_NE(s.roles[0], s.roles[8]);  // past the named roles a desk number keeps them apart
  EXPECT_EQ(MakeAgentScript(10, 4, 1400).preamble, s.preamble);
  EXPECT_LT(MakeAgentScript(2, 1, 100).preamble.size(), 1000u);
}

TEST(LlamaServer, ArgvMatchesEmbersSettings) {
  auto a = LlamaServerArgv("/bin/llama-server", "/m/model file.gguf", 4321, 2, 8, 256, {"--cache-ram", "0"});
  auto after = [&a](const std::string& flag) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("<missing>") : *(it + 1);
  };
  EXPECT_EQ(a[0], "/bin/llama-server");
  EXPECT_EQ(after("-m"), "/m/model file.gguf");  // one argv entry, spaces and all
  EXPECT_EQ(after("--host"), "127.0.0.1");
  EXPECT_EQ(after("--port"), "4321");
  EXPECT_EQ(after("-t"), "2");
  EXPECT_EQ(after("-tb"), "2");
  EXPECT_EQ(after("-np"), "8");
  EXPECT_EQ(after("-c"), "2048");  // 8 lanes x 256 in one unified pool
  EXPECT_NE(std::find(a.begin(), a.end(), "-kvu"), a.end());
  EXPECT_EQ(after("-fa"), "off");
  EXPECT_EQ(after("-ctk"), "f16");
  EXPECT_EQ(after("-ctv"), "f16");
  EXPECT_NE(std::find(a.begin(), a.end(), "--jinja"), a.end());
  EXPECT_EQ(a[a.size() - 2], "--cache-ram");  // extra flags last, so they win
}

TEST(LlamaServer, LaneContextCoversPromptAndReplies) {
  BenchRequest r;
  r.client_prompt_tokens = 64;
  r.client_gen_tokens = 96;
  EXPECT_EQ(LaneContextTokens(Leg::kConcurrency, r), 256);
  r.preamble_tokens = 1400;
  r.agent_turns = 4;
  r.agent_gen_tokens = 32;
  const int agents = LaneContextTokens(Leg::kAgents, r);
  EXPECT_GE(agents, 1400 + 4 * 32 + 4 * 64);
  EXPECT_EQ(agents % 256, 0);
}

TEST(LlamaServer, MissingBinaryMakesEveryLoadLegNotApplicable) {
  auto r = MakeLlamaServerRunner({"", {}, 10});
  EXPECT_EQ(r->name(), "llama-server");
  for (Leg leg : {Leg::kConcurrency, Leg::kAgents}) {
    EXPECT_FALSE(r->Supports(leg));
    EXPECT_EQ(r->SkipReason(leg), "n/a: native llama-server not built (scripts/build-peer)");
    EXPECT_FALSE(r->Run(leg, {}).ok());
  }
  EXPECT_FALSE(r->Supports(Leg::kDirect));
  EXPECT_EQ(r->SkipReason(Leg::kDirect).rfind("skipped:", 0), 0u);  // printed, never stored as n/a
  EXPECT_EQ(FindLlamaServer("/nonexistent/llama-server", "/nonexistent"), "");
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  EXPECT_GT(*port, 0);
}

TEST(LlamaServer, AServerThatCrashesBeforeReadySaysHowItEnded) {
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  // What a build with kernels the CPU cannot run does: SIGILL while loading.
  auto s = ServerProcess::StartCommand({"/bin/sh", "-c", "echo loading; kill -ILL $$"}, *port, 30, "llama-server");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("llama-server died of signal 4 before /health answered"), std::string::npos)
      << s.status().ToString();
  EXPECT_NE(s.status().message().find("loading"), std::string::npos);  // with its log
  auto e = ServerProcess::StartCommand({"/bin/sh", "-c", "exit 3"}, *port, 30, "llama-server");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("llama-server exited 3"), std::string::npos) << e.status().ToString();
  EXPECT_FALSE(ServerProcess::StartCommand({}, *port, 1, "x").ok());
}

TEST(ServedClient, FoldsTimingsAndWhetherCachedTokensWereReported) {
  CompletionTiming t;
  std::string err;
  FoldCompletionEvent(R"({"choices":[{"text":"a"}],"timings":{"prompt_n":3,"cache_n":61}})", 5, t, &err);
  FoldCompletionEvent(R"({"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":2}})", 9, t, &err);
  EXPECT_EQ(t.timings_prompt_n, 3);
  EXPECT_EQ(t.timings_cache_n, 61);
  EXPECT_FALSE(t.cached_reported);
  FoldCompletionEvent(R"({"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}})",
                      9, t, &err);
  EXPECT_TRUE(t.cached_reported);
  EXPECT_EQ(t.cached_tokens, 4);
  EXPECT_TRUE(err.empty());
}

// A streaming completions + chat server that records every body and how many requests overlapped.
// Replies are `n` chunks ("w0 w1 ..."), 2 ms apart, with usage (cached tokens 0) and [DONE]. Its
// /apply-template renders messages as their JSON (recorded), /tokenize gives one id per 4 bytes.
class RecordingServer {
 public:
  RecordingServer() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      {
        MutexLock l(&mu_);
        bodies_.push_back(body);
      }
      const int n = body.value("max_tokens", 1);
      const int prompt = body.contains("prompt") ? static_cast<int>(body["prompt"].size()) : 100;
      const bool chat = req.path == "/v1/chat/completions";
      res.set_chunked_content_provider("text/event-stream", [this, n, prompt, chat](size_t, httplib::DataSink& sink) {
        const int now = ++active_;
        for (int seen = max_active_.load(); now > seen && !max_active_.compare_exchange_weak(seen, now);) {
        }
        for (int i = 0; i < n; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          const std::string piece = (i ? " w" : "w") + std::to_string(i);
          json c = chat ? json{{"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}}
                        : json{{"choices", {{{"index", 0}, {"text", piece}}}}};
          const std::string s = "data: " + c.dump() + "\n\n";
          sink.write(s.data(), s.size());
        }
        --active_;
        json u = {{"choices", json::array()},
                  {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", n},
                             {"prompt_tokens_details", {{"cached_tokens", 0}}}}}};
        const std::string tail = "data: " + u.dump() + "\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
    };
    server_.Post("/v1/completions", handler);
    server_.Post("/v1/chat/completions", handler);
    server_.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      {
        MutexLock l(&mu_);
        templates_.push_back(body["messages"]);
      }
      res.set_content(json{{"prompt", body["messages"].dump()}}.dump(), "application/json");
    });
    server_.Post("/tokenize", [](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      const size_t n = body["content"].get<std::string>().size() / 4 + 1;
      res.set_content(json{{"tokens", std::vector<int32_t>(n, 7)}}.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // A failed bind ends listen_after_bind at once: fail then, do not wait for is_running forever.
    if (!ember::testing::PollUntil([&] { return server_.is_running(); }, std::chrono::seconds(10))) {
      ADD_FAILURE() << "the fake server did not start (port " << port_ << ")";
    }
  }
  ~RecordingServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  int max_active() const { return max_active_.load(); }
  std::vector<json> bodies() {
    MutexLock l(&mu_);
    return bodies_;
  }
  std::vector<json> templates() {
    MutexLock l(&mu_);
    return templates_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> active_{0}, max_active_{0};
  Mutex mu_;
  std::vector<json> bodies_ GUARDED_BY(mu_);
  std::vector<json> templates_ GUARDED_BY(mu_);
};

TEST(LoadLegs, ClientLevelRunsEveryClientAtOnceWithExactLengthRequests) {
  RecordingServer server;
  std::vector<int32_t> base = {1};
  for (int i = 0; i < 20; ++i) base.push_back(50 + i);
  std::vector<std::vector<int32_t>> prompts;
  for (int c = 0; c < 4; ++c) prompts.push_back(ClientPrompt(base, c, 12));
  auto m = RunClientLevel({server.port(), {128001, 128009}, 30}, prompts, 24);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->clients, 4);
  EXPECT_EQ(m->completion_tokens, 4 * 24);
  EXPECT_GT(m->aggregate_tok_s, 0);
  EXPECT_GE(m->ttft_p95_ms, m->ttft_p50_ms);
  EXPECT_EQ(m->recomputed_tokens, 4 * 12);
  EXPECT_GE(server.max_active(), 2);  // concurrent, not one after another (24 chunks x 2 ms each)
  auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 4u);
  for (const auto& b : bodies) {
    EXPECT_EQ(b["max_tokens"], 24);
    EXPECT_EQ(b["temperature"], 0);
    EXPECT_EQ(b["ignore_eos"], true);
    EXPECT_EQ(b["logit_bias"]["128009"], -100);
    EXPECT_TRUE(b["stream"].get<bool>());
    EXPECT_EQ(b["prompt"].size(), 12u);
  }
}

TEST(LoadLegs, AgentsKeepTheirOwnHistoriesUnderTheSharedPreamble) {
  RecordingServer server;
  AgentScript script = MakeAgentScript(3, 2, 200);
  auto m = RunAgents({server.port(), {128009}, 30}, script, 5);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->clients, 3);
  EXPECT_EQ(m->requests, 6);
  EXPECT_EQ(m->completion_tokens, 30);
  // Every turn: the server renders the history, tokenizes it, and the ids go to /v1/completions.
  auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 6u);
  for (const auto& b : bodies) {
    EXPECT_TRUE(b.contains("prompt") && b["prompt"].is_array() && !b["prompt"].empty()) << b.dump();
    EXPECT_FALSE(b.contains("messages"));
    EXPECT_EQ(b["max_tokens"], 5);
    EXPECT_EQ(b["ignore_eos"], true);
  }
  auto templates = server.templates();
  ASSERT_EQ(templates.size(), 6u);
  int second_turns = 0;
  for (const auto& msgs : templates) {
    ASSERT_GE(msgs.size(), 2u);
    EXPECT_EQ(msgs[0]["role"], "system");
    EXPECT_EQ(msgs[0]["content"], script.preamble);  // shared, byte for byte
    if (msgs.size() == 4) {
      ++second_turns;
      EXPECT_EQ(msgs[2]["role"], "assistant");
      EXPECT_EQ(msgs[2]["content"], "w0 w1 w2 w3 w4");  // the agent's own reply, appended
      EXPECT_EQ(msgs[3]["role"], "user");
      // Its role opened its history, so turn 2 of agent a follows turn 1 of agent a.
      bool own = false;
      for (size_t a = 0; a < script.roles.size(); ++a)
        own |= msgs[1]["content"].get<std::string>().rfind(script.roles[a], 0) == 0 && msgs[3]["content"] == script.asks[a][1];
      EXPECT_TRUE(own) << msgs.dump();
    } else {
      EXPECT_EQ(msgs.size(), 2u);
    }
  }
  EXPECT_EQ(second_turns, 3);
  EXPECT_GT(m->prompt_tokens, 6 * 200);  // the ids the server's tokenizer gave (one per 4 bytes here)
}

TEST(LoadLegs, AFailedClientFailsTheLevelNamingIt) {
  // Nothing listens on this port: every client's request fails, the level reports the first.
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto m = RunClientLevel({*port, {}, 5}, {{1, 2, 3}, {1, 4, 5}}, 4);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("client 1/2"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace ember::bench
