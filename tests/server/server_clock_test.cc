// The server reads time only from its Env: with a simulated clock (tests/support/sim_env.h) the request
// read deadline, uptime and `created` follow simulated time exactly, and nothing here sleeps.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "server/fake_backend.h"
#include "server/http_server.h"
#include "support/sim_env.h"

namespace ember::server {
namespace {

using ember::testing::SimEnv;
constexpr int64_t kSecond = 1'000'000;

class ServerClockTest : public ::testing::Test {
 protected:
  void Start(ServeOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    backend_ = std::make_unique<FakeBackend>();
    server_ = std::make_unique<HttpServer>(o, backend_.get(), &sim_);
    ASSERT_TRUE(server_->Start().ok());
  }
  nlohmann::json Get(const std::string& path) {
    httplib::Client c("127.0.0.1", server_->port());
    auto r = c.Get(path.c_str());
    EXPECT_TRUE(r) << path;
    return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
  }
  SimEnv sim_;  // declared first: the server reads it until it is destroyed
  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ServerClockTest, UptimeAndCreatedComeFromTheEnv) {
  Start();
  sim_.Advance(90 * kSecond);
  EXPECT_DOUBLE_EQ(Get("/stats")["uptime_s"].get<double>(), 90.0);
  const nlohmann::json models = Get("/v1/models");
  ASSERT_TRUE(models.contains("data") && !models["data"].empty()) << models.dump();
  EXPECT_EQ(models["data"][0]["created"].get<int64_t>(), (SimEnv::kStartWallMicros + 90 * kSecond) / kSecond);
}

// The request deadline (--request-timeout) is an hour of simulated time: a client that sent half its
// headers gets its 408 once the simulated clock passes the hour — never before it, and without the test
// waiting an hour. The server polls its socket in real 100 ms slices, so the test moves the clock in
// steps and looks for the answer in between; the bound it asserts is on simulated time only.
TEST_F(ServerClockTest, TheRequestDeadlineRunsOnTheEnvClock) {
  ServeOptions o;
  o.request_timeout_s = 3600;
  o.header_timeout_s = 7200;  // the head's own deadline (5 s by default) would fire first
  Start(o);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server_->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  const int64_t sent_at = sim_.MonotonicMicros();  // the server starts the request's clock after this
  std::string response;
  for (int step = 0; step < 2000 && response.empty(); ++step) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0) response.assign(buf, static_cast<size_t>(n));
      break;
    }
    sim_.Advance(100 * kSecond);
  }
  const int64_t answered_at = sim_.MonotonicMicros();
  ::close(fd);
  ASSERT_EQ(response.rfind("HTTP/1.1 408", 0), 0u) << response;
  EXPECT_GE(answered_at - sent_at, 3600 * kSecond);  // not a moment of simulated time early
}

}  // namespace
}  // namespace ember::server
