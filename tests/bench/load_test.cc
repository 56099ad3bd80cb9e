#include "bench/load_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bench/load_stats.h"
#include "bench/sse_parser.h"
#include "support/poll.h"

namespace ember::bench {
namespace {

RequestResult Ok(double ttft, double last, double latency, int tokens) {
  RequestResult r;
  r.ok = true;
  r.ttft_s = ttft;
  r.last_chunk_s = last;
  r.latency_s = latency;
  r.completion_tokens = tokens;
  return r;
}

LevelStats Level(double level, double agg, double rpm = 0, double ttft95 = 100) {
  LevelStats s;
  s.level = level;
  s.aggregate_tok_s = agg;
  s.achieved_rpm = rpm;
  s.ttft_p95_ms = ttft95;
  return s;
}

TEST(LoadStats, PercentilesThroughputAndErrors) {
  std::vector<RequestResult> rs;
  for (int i = 1; i <= 10; ++i) rs.push_back(Ok(0.01 * i, 0.01 * i + 1.0, 0.01 * i + 1.1, 11));
  RequestResult bad;
  bad.error = "HTTP 500";
  rs.push_back(bad);
  LevelStats s = SummarizeLevel("closed", 4, rs, 2.0);
  EXPECT_EQ(s.requests, 11);
  EXPECT_EQ(s.errors, 1);
  EXPECT_EQ(s.first_error, "HTTP 500");
  EXPECT_NEAR(s.ttft_p50_ms, 55, 1e-9);
  EXPECT_NEAR(s.ttft_p95_ms, 95.5, 1e-9);
  EXPECT_NEAR(s.ttft_p99_ms, 99.1, 1e-9);
  EXPECT_NEAR(s.latency_p50_ms, 1155, 1e-9);
  EXPECT_NEAR(s.aggregate_tok_s, 55, 1e-9);    // 110 tokens / 2 s
  EXPECT_NEAR(s.per_request_tok_s, 10, 1e-9);  // (11 - 1) tokens over 1 s of streaming
  EXPECT_NEAR(s.achieved_rpm, 300, 1e-9);      // 10 completed in 2 s
}

TEST(LoadStats, ClosedLoopKneeIsWhereThroughputStopsGrowing) {
  EXPECT_EQ(ClosedLoopKnee({Level(1, 40), Level(2, 78), Level(4, 80), Level(8, 79)}), 1u);
  EXPECT_EQ(ClosedLoopKnee({Level(1, 40), Level(2, 41)}), 0u);
  EXPECT_FALSE(ClosedLoopKnee({Level(1, 40), Level(2, 78), Level(4, 150)}));  // still scaling
  EXPECT_FALSE(ClosedLoopKnee({Level(1, 40)}));
  EXPECT_FALSE(ClosedLoopKnee({}));
}

TEST(LoadStats, OpenLoopKneeIsTheFirstRateNotKeptUp) {
  // Offered 30/60/120 rpm; the server completes 31, 61, then only 80.
  EXPECT_EQ(OpenLoopKnee({Level(30, 0, 31), Level(60, 0, 61), Level(120, 0, 80)}), 2u);
  // Keeps up on rate but TTFT p95 explodes 4x at 60 rpm.
  EXPECT_EQ(OpenLoopKnee({Level(30, 0, 31, 100), Level(60, 0, 61, 400)}), 1u);
  EXPECT_FALSE(OpenLoopKnee({Level(30, 0, 30, 100), Level(60, 0, 59, 120)}));
}

TEST(SseParser, EventsAcrossArbitraryChunks) {
  SseParser p;
  EXPECT_TRUE(p.Feed("data: {\"a\"").empty());
  auto ev = p.Feed(":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\ndata: [DONE]\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], "{\"a\":1}");
  EXPECT_EQ(ev[1], "x\ny");
  ev = p.Feed("\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], "[DONE]");
}

TEST(LoadConfigCheck, LoopbackOnlyAndBounded) {
  EXPECT_TRUE(CheckLoopbackHost("127.0.0.1").ok());
  EXPECT_TRUE(CheckLoopbackHost("127.1.2.3").ok());
  EXPECT_TRUE(CheckLoopbackHost("localhost").ok());
  EXPECT_TRUE(CheckLoopbackHost("::1").ok());
  EXPECT_FALSE(CheckLoopbackHost("10.0.0.1").ok());
  EXPECT_FALSE(CheckLoopbackHost("127.0.0.1.evil.com").ok());
  EXPECT_FALSE(CheckLoopbackHost("example.com").ok());
  EXPECT_FALSE(CheckLoopbackHost("0.0.0.0").ok());
  LoadConfig cfg;
  EXPECT_TRUE(ValidateLoadConfig(cfg).ok());
  cfg.host = "192.168.1.5";
  EXPECT_EQ(RunLoad(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.host = "127.0.0.1";
  cfg.concurrency = {0};
  EXPECT_FALSE(ValidateLoadConfig(cfg).ok());
  cfg.concurrency = {};
  EXPECT_FALSE(ValidateLoadConfig(cfg).ok());
  cfg.rpm = {60};
  cfg.requests_per_level = 0;
  EXPECT_FALSE(ValidateLoadConfig(cfg).ok());
}

// A tiny OpenAI-style streaming server: `tokens` content chunks `delay_ms` apart, then usage and
// [DONE]. At most `capacity` requests generate at once (others wait), like a server with fixed slots.
// Other endings on request: an empty reply (finish_reason only), a stream cut after its first chunk,
// a stream that ends cleanly but without [DONE].
class FakeSseServer {
 public:
  enum class Ending { kNormal, kEmptyReply, kCut, kNoDone };
  FakeSseServer(int tokens, int delay_ms, int capacity) : tokens_(tokens), delay_ms_(delay_ms), capacity_(capacity) {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.body.find("\"stream\":true") == std::string::npos) {
        res.status = 400;
        return;
      }
      if (fail_next_.exchange(false)) {
        res.status = 500;
        res.set_content("{\"error\":{\"message\":\"boom\"}}", "application/json");
        return;
      }
      res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
        if (ending_ != Ending::kNormal) return OtherEnding(sink);
        Acquire();
        for (int i = 0; i < tokens_; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
          std::string chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t" + std::to_string(i) + "\"}}]}\n\n";
          sink.write(chunk.data(), chunk.size());
        }
        std::string tail = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":" +
                           std::to_string(tokens_) + "}}\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        Release();
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // A failed bind ends listen_after_bind at once: fail then, do not wait for is_running forever.
    if (!ember::testing::PollUntil([&] { return server_.is_running(); }, std::chrono::seconds(10))) {
      ADD_FAILURE() << "the fake server did not start (port " << port_ << ")";
    }
  }
  ~FakeSseServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  void FailNext() { fail_next_ = true; }
  void SetEnding(Ending e) { ending_ = e; }

 private:
  bool OtherEnding(httplib::DataSink& sink) {
    auto send = [&](const std::string& s) { sink.write(s.data(), s.size()); };
    send("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n");
    if (ending_ == Ending::kCut) {
      send("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t0\"}}]}\n\n");
      return false;  // httplib drops the connection without the last chunk
    }
    if (ending_ == Ending::kNoDone) send("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t0\"}}]}\n\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    send("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    send("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n");
    if (ending_ != Ending::kNoDone) send("data: [DONE]\n\n");
    sink.done();
    return true;
  }

  // Waits for a free slot; a minute without one (a client that never releases) fails instead of hanging.
  void Acquire() {
    const bool got = ember::testing::PollUntil([&] {
      int cur = active_.load();
      return cur < capacity_ && active_.compare_exchange_weak(cur, cur + 1);
    }, std::chrono::seconds(60));
    if (!got) {
      ADD_FAILURE() << "no free slot of " << capacity_ << " within 60 s";
      ++active_;  // Release() follows either way
    }
  }
  void Release() { --active_; }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  int tokens_, delay_ms_, capacity_;
  std::atomic<int> active_{0};
  std::atomic<bool> fail_next_{false};
  std::atomic<Ending> ending_{Ending::kNormal};
};

TEST(LoadEndToEnd, ClosedAndOpenLoopAgainstFakeServer) {
  FakeSseServer server(/*tokens=*/6, /*delay_ms=*/4, /*capacity=*/2);
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.concurrency = {1, 2, 4};
  cfg.rpm = {600};
  cfg.requests_per_level = 6;
  cfg.request_timeout_s = 20;
  cfg.max_total_s = 40;
  auto rep = RunLoad(cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->closed.size(), 3u);
  ASSERT_EQ(rep->open.size(), 1u);
  EXPECT_EQ(rep->total_errors, 0) << rep->closed[0].first_error;
  for (const auto& l : rep->closed) {
    EXPECT_EQ(l.requests, 6);
    EXPECT_GT(l.ttft_p50_ms, 0);
    EXPECT_GT(l.latency_p50_ms, l.ttft_p50_ms);  // streaming continues after the first chunk
    EXPECT_GT(l.aggregate_tok_s, 0);
    EXPECT_GT(l.per_request_tok_s, 0);
  }
  // Two slots and 4 in flight: some request must wait for a slot, which frees only after a whole
  // stream (6 tokens x 4 ms of sleep, a lower bound on any machine), so the slowest first token at 4
  // in flight takes at least that long. (Comparing medians across levels is machine-speed dependent:
  // it flipped on a loaded 2-core machine.)
  EXPECT_GE(rep->closed[2].ttft_p99_ms, 6 * 4 * 0.9);
  auto j = LoadReportToJson(*rep);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_NE(LoadReportToText(*rep).find("errors: 0"), std::string::npos);
}

TEST(LoadEndToEnd, ServerErrorsAreCountedNotHidden) {
  FakeSseServer server(3, 1, 4);
  server.FailNext();
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.concurrency = {1};
  cfg.requests_per_level = 3;
  cfg.request_timeout_s = 10;
  auto rep = RunLoad(cfg);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->total_errors, 1);
  EXPECT_NE(rep->closed[0].first_error.find("HTTP 500"), std::string::npos);
  EXPECT_NE(LoadReportToText(*rep).find("must be 0"), std::string::npos);
  EXPECT_NE(LoadReportToText(*rep).find("first error: HTTP 500"), std::string::npos);
}

TEST(LoadEndToEnd, NothingListeningIsATransportError) {
  LoadConfig cfg;
  cfg.port = 1;  // privileged and unused: connection refused
  RequestResult r = SendChatRequest(cfg);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("transport"), std::string::npos);
}

// The load tool reports what the server did, and only that (issue 14: "a load tool that cries wolf").
TEST(LoadErrors, AnEmptyReplyTheServerEndedIsNoError) {
  FakeSseServer server(0, 20, 4);
  server.SetEnding(FakeSseServer::Ending::kEmptyReply);
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.request_timeout_s = 10;
  const RequestResult r = SendChatRequest(cfg);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.completion_tokens, 1);
  EXPECT_GE(r.ttft_s, 0.020 * 0.9);  // the finish arrived after the 20 ms "generation"
  EXPECT_GE(r.latency_s, r.ttft_s);
}

TEST(LoadErrors, ACutStreamIsATransportErrorNamingWhatArrived) {
  FakeSseServer server(0, 1, 4);
  server.SetEnding(FakeSseServer::Ending::kCut);
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.request_timeout_s = 10;
  const RequestResult r = SendChatRequest(cfg);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("transport: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("connection lost after"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("after 0 "), std::string::npos) << r.error;  // the first chunks did arrive
}

TEST(LoadErrors, AStreamWithoutDoneIsTheServersError) {
  FakeSseServer server(0, 1, 4);
  server.SetEnding(FakeSseServer::Ending::kNoDone);
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.request_timeout_s = 10;
  const RequestResult r = SendChatRequest(cfg);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("without data: [DONE]"), std::string::npos) << r.error;
}

TEST(LoadErrors, TheClientsOwnTimeoutIsNotATransportError) {
  FakeSseServer server(/*tokens=*/15, /*delay_ms=*/100, 4);
  LoadConfig cfg;
  cfg.port = server.port();
  cfg.request_timeout_s = 1;
  const RequestResult r = SendChatRequest(cfg);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("timeout: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("--timeout 1 s"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace ember::bench
