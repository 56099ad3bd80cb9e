// Lanes and memory admission through the HTTP layer (in-process server, FakeBackend with lanes and a
// fake KV budget): a request that can never fit is a 400 naming the numbers in each API's error shape;
// /stats and /metrics show the lanes, the request waiting for memory and the backend's batch values.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "server/fake_backend.h"
#include "server/http_server.h"

namespace ember::server {
namespace {

using nlohmann::json;

class AdmissionServerTest : public ::testing::Test {
 protected:
  void Start(int lanes, int64_t kv_budget_tokens) {
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    FakeBackend::Options f;
    f.max_parallel = lanes;
    f.kv_budget_tokens = kv_budget_tokens;
    backend_ = std::make_unique<FakeBackend>(f);
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (backend_) backend_->Release();
    server_.reset();
  }
  httplib::Result Post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(20);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  std::string Get(const std::string& path) {
    httplib::Client c("127.0.0.1", server_->port());
    auto r = c.Get(path.c_str());
    EXPECT_TRUE(r) << path;
    return r ? r->body : "";
  }
  static json Chat(const std::string& user, int max_tokens) {
    return {{"model", "x"}, {"max_tokens", max_tokens}, {"messages", {{{"role", "user"}, {"content", user}}}}};
  }
  static bool Eventually(const std::function<bool()>& cond) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return cond();
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
};

// "<|user|>echo: x\n<|assistant|>" is 29 byte tokens.
constexpr int kChatPromptTokens = 29;

TEST_F(AdmissionServerTest, ARequestThatCanNeverFitIs400NamingTheNumbers) {
  Start(2, 100);
  auto r = Post("/v1/chat/completions", Chat("echo: x", 200));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["param"], "max_tokens");
  const std::string msg = e["message"];
  for (const std::string& n : {std::to_string(kChatPromptTokens + 200), std::to_string(kChatPromptTokens), std::string("200"),
                               std::string("100")}) {
    EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' missing in: " << msg;
  }
  // The same refusal in Anthropic's shape.
  auto a = Post("/v1/messages", {{"model", "x"}, {"max_tokens", 200}, {"messages", {{{"role", "user"}, {"content", "echo: x"}}}}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 400) << a->body;
  json aj = json::parse(a->body);
  EXPECT_EQ(aj["type"], "error");
  EXPECT_EQ(aj["error"]["type"], "invalid_request_error");
  EXPECT_NE(aj["error"]["message"].get<std::string>().find("KV budget is 100 tokens"), std::string::npos) << a->body;
  // Raw completions too; and without max_tokens the rest of the context is what it would need.
  auto c = Post("/v1/completions", {{"model", "x"}, {"prompt", "echo: x"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 400) << c->body;
  // What fits is served; nothing was queued by the refusals.
  auto ok = Post("/v1/chat/completions", Chat("echo: fits", 60));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(backend_->generations_started(), 1);
}

TEST_F(AdmissionServerTest, StatsAndMetricsShowLanesMemoryWaitersAndBatchValues) {
  Start(2, 200);
  backend_->Hold();
  const int need = kChatPromptTokens + 100;  // 129: two do not fit in 200
  auto first = std::async(std::launch::async, [&] { return Post("/v1/chat/completions", Chat("echo: x", 100)); });
  ASSERT_TRUE(Eventually([&] { return backend_->running_generations() == 1; }));
  auto second = std::async(std::launch::async, [&] { return Post("/v1/chat/completions", Chat("echo: x", 100)); });
  json stats;
  ASSERT_TRUE(Eventually([&] {
    stats = json::parse(Get("/stats"));
    return stats["queue"]["waiting_for_memory"] == 1;
  })) << stats.dump();
  EXPECT_EQ(stats["queue"]["running"], 1);
  EXPECT_EQ(stats["queue"]["waiting"], 1);  // waiting for memory counts as waiting
  EXPECT_EQ(stats["queue"]["lanes"], 2);
  EXPECT_EQ(stats["queue"]["admission_waits"], 1);
  ASSERT_EQ(stats["lanes"].size(), 2u) << stats.dump();
  int running_lanes = 0;
  for (const json& l : stats["lanes"]) {
    running_lanes += l["state"] == "running" ? 1 : 0;
    EXPECT_TRUE(l.contains("cache_hits") && l.contains("cached_tokens") && l.contains("requests")) << l.dump();
  }
  EXPECT_EQ(running_lanes, 2);  // the second holds its lane while it waits for memory inside Generate
  EXPECT_EQ(stats["batch"]["values"]["kv_budget_tokens"], 200);
  EXPECT_EQ(stats["batch"]["values"]["kv_used_tokens"], need);

  std::string m = Get("/metrics");
  EXPECT_NE(m.find("\nember_queue_waiting_for_memory 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nember_queue_lanes 2\n"), std::string::npos);
  EXPECT_NE(m.find("# TYPE ember_lane_busy gauge\n"), std::string::npos);
  EXPECT_NE(m.find("ember_lane_busy{lane=\"0\"} "), std::string::npos);
  EXPECT_NE(m.find("ember_lane_busy{lane=\"1\"} "), std::string::npos);
  EXPECT_NE(m.find("# TYPE ember_batch_kv_used_tokens gauge\nember_batch_kv_used_tokens " + std::to_string(need) + "\n"),
            std::string::npos);
  EXPECT_NE(m.find("# TYPE ember_batch_admissions_refused_total counter\n"), std::string::npos);

  backend_->Release();
  for (auto* f : {&first, &second}) {
    httplib::Result r = f->get();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  ASSERT_TRUE(Eventually([&] { return json::parse(Get("/stats"))["queue"]["completed"] == 2; }));
  m = Get("/metrics");
  EXPECT_NE(m.find("\nember_queue_waiting_for_memory 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nember_queue_admission_waits_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("# TYPE ember_lane_requests_total counter\n"), std::string::npos);
  // Two generations, counted per lane by the scheduler and by the backend.
  int completed = 0, requests = 0;
  for (int lane : {0, 1}) {
    const std::string label = "{lane=\"" + std::to_string(lane) + "\"} ";
    for (auto [family, sum] : {std::pair{"ember_lane_completed_total", &completed}, std::pair{"ember_lane_requests_total", &requests}}) {
      const size_t at = m.find(std::string("\n") + family + label);
      ASSERT_NE(at, std::string::npos) << family << label;
      *sum += std::stoi(m.substr(at + 1 + std::string(family).size() + label.size()));
    }
  }
  EXPECT_EQ(completed, 2);
  EXPECT_EQ(requests, 2);
  json after = json::parse(Get("/stats"));
  EXPECT_EQ(after["queue"]["waiting_for_memory"], 0);
  EXPECT_EQ(after["batch"]["values"]["kv_used_tokens"], 0);
}

}  // namespace
}  // namespace ember::server
