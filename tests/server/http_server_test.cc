// The whole HTTP layer in-process: HttpServer on an ephemeral loopback port, the FakeBackend behind it,
// httplib's client in front.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "cache/cache_namespace.h"
#include "server/fake_backend.h"
#include "support/poll.h"

namespace ember::server {
namespace {

using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void Start(ServeOptions o = {}, FakeBackend::Options f = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    backend_ = std::make_unique<FakeBackend>(f);
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  httplib::Result Post(const std::string& path, const json& body, httplib::Headers headers = {}) {
    return client_->Post(path.c_str(), headers, body.dump(), "application/json");
  }
  static json Chat(const std::string& user, json extra = json::object()) {
    json body = {{"model", "x"}, {"messages", {{{"role", "user"}, {"content", user}}}}};
    body.update(extra);
    return body;
  }
  // The data payloads of an SSE body, in order (event names dropped).
  static std::vector<std::string> SseData(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const size_t end = body.find("\n\n", pos);
      out.push_back(body.substr(pos + 6, end - pos - 6));
      pos = end;
    }
    return out;
  }
  static std::vector<std::string> SseEventNames(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = body.find("event: ", pos)) != std::string::npos) {
      const size_t end = body.find('\n', pos);
      out.push_back(body.substr(pos + 7, end - pos - 7));
      pos = end;
    }
    return out;
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, HealthAndModels) {
  Start();
  auto r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["status"], "ok");
  auto m = client_->Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "ember-fake");
}

TEST_F(ServerTest, ChatNonStream) {
  Start();
  auto r = Post("/v1/chat/completions", Chat("echo: Hello there"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "ember-fake");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 4);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

TEST_F(ServerTest, SamplingFieldsReachTheBackend) {
  Start();
  auto r = Post("/v1/chat/completions",
                Chat("echo: x", {{"temperature", 0.25}, {"top_k", 7}, {"seed", 99}, {"cache_salt", "s1"},
                                 {"logit_bias", {{"5", 2.5}}}, {"max_tokens", 9}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  GenerationRequest g = backend_->last_request();
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.25f);
  EXPECT_EQ(g.sampling.top_k, 7);
  EXPECT_EQ(g.sampling.seed, 99u);
  EXPECT_EQ(g.cache_salt, CacheNamespace::TenantOf("", "s1"));  // the tenant digest, never the salt itself
  EXPECT_EQ(g.max_tokens, 9);
  ASSERT_EQ(g.sampling.logit_bias.size(), 1u);
}

TEST_F(ServerTest, ChatStreamWithUsageAndStopString) {
  Start();
  auto r = Post("/v1/chat/completions",
                Chat("echo: one two STOP three", {{"stream", true}, {"stop", "STOP"},
                                                   {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> data = SseData(r->body);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::string content;
  std::string finish;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    json c = json::parse(data[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    content += c["choices"][0]["delta"].value("content", "");
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(content, "one two ");
  EXPECT_EQ(r->body.find("STOP"), std::string::npos);
  EXPECT_EQ(finish, "stop");
  json usage = json::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_GT(usage["usage"]["completion_tokens"].get<int>(), 0);
}

TEST_F(ServerTest, CompletionsStreamAndNonStream) {
  Start();
  auto r = Post("/v1/completions", {{"prompt", "echo: abc def"}, {"max_tokens", 2}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abc de");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  auto s = Post("/v1/completions", {{"prompt", "echo: abc def"}, {"stream", true}});
  ASSERT_TRUE(s);
  std::string text;
  for (const std::string& d : SseData(s->body)) {
    if (d != "[DONE]") text += json::parse(d)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "abc def");
}

TEST_F(ServerTest, LogprobsAreReported) {
  Start();
  auto r = Post("/v1/chat/completions", Chat("echo: abcdef", {{"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_TRUE(r);
  json lp = json::parse(r->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "abc");
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
}

// The fake has no prompt cache (what the cache does is tested on the real engine: engine_backend_test,
// tenancy_test, tests/e2e/real_model and ssd): a repeated conversation reports nothing cached.
TEST_F(ServerTest, TheFakeReportsNoCachedTokensAndNoCacheTier) {
  Start();
  for (int run = 0; run < 2; ++run) {
    auto r = Post("/v1/chat/completions", Chat("echo: the same answer twice"));
    ASSERT_TRUE(r);
    json j = json::parse(r->body);
    EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << "run " << run;
    EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cache_tier"], "none") << "run " << run;
  }
  auto s = client_->Get("/stats");
  ASSERT_TRUE(s);
  EXPECT_TRUE(json::parse(s->body)["cache"]["tiers"].empty()) << s->body;
}

TEST_F(ServerTest, QwenToolCallBecomesToolCalls) {
  Start();
  json tools = {{{"type", "function"},
                 {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
  auto r = Post("/v1/chat/completions",
                Chat(R"(echo: <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>)",
                     {{"tools", tools}}));
  ASSERT_TRUE(r);
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  json call = j["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>())["city"], "Paris");
  EXPECT_FALSE(call["id"].get<std::string>().empty());
  // Streaming delivers the same call as a tool_calls delta.
  auto s = Post("/v1/chat/completions",
                Chat(R"(echo: {"name": "get_weather", "parameters": {"city": "Oslo"}})", {{"tools", tools}, {"stream", true}}));
  ASSERT_TRUE(s);
  EXPECT_NE(s->body.find("\"tool_calls\":[{"), std::string::npos);
  EXPECT_NE(s->body.find("\"finish_reason\":\"tool_calls\""), std::string::npos);
}

TEST_F(ServerTest, StreamingWithToolsSendsTextBeforeTheCall) {
  Start();
  json tools = {{{"type", "function"}, {"function", {{"name", "f"}}}}};
  auto s = Post("/v1/chat/completions",
                Chat(R"(echo: Checking now. <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>)",
                     {{"tools", tools}, {"stream", true}}));
  ASSERT_TRUE(s);
  std::string content;
  json calls;
  for (const std::string& d : SseData(s->body)) {
    if (d == "[DONE]") continue;
    json delta = json::parse(d)["choices"][0]["delta"];
    content += delta.value("content", "");
    if (delta.contains("tool_calls")) calls = delta["tool_calls"];
  }
  EXPECT_EQ(content, "Checking now. ");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "f");
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(s->body.find("<tool_call>"), std::string::npos);
}

TEST_F(ServerTest, AnthropicMessages) {
  Start();
  auto r = Post("/v1/messages", {{"model", "x"}, {"max_tokens", 50},
                                 {"messages", {{{"role", "user"}, {"content", "echo: hi there"}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["content"][0]["text"], "hi there");
  EXPECT_EQ(j["stop_reason"], "end_turn");
  EXPECT_TRUE(j["usage"].contains("cache_read_input_tokens"));
}

TEST_F(ServerTest, AnthropicStreamEventGrammar) {
  Start();
  auto r = Post("/v1/messages", {{"max_tokens", 50}, {"stream", true}, {"stop_sequences", {"END"}},
                                 {"messages", {{{"role", "user"}, {"content", "echo: abc END def"}}}}});
  ASSERT_TRUE(r);
  std::vector<std::string> names = SseEventNames(r->body);
  ASSERT_GE(names.size(), 7u);
  EXPECT_EQ(names[0], "message_start");
  EXPECT_EQ(names[1], "content_block_start");
  EXPECT_EQ(names[2], "ping");
  EXPECT_EQ(names[names.size() - 3], "content_block_stop");
  EXPECT_EQ(names[names.size() - 2], "message_delta");
  EXPECT_EQ(names.back(), "message_stop");
  std::string text;
  json delta;
  for (const std::string& d : SseData(r->body)) {
    json e = json::parse(d);
    if (e["type"] == "content_block_delta") text += e["delta"]["text"].get<std::string>();
    if (e["type"] == "message_delta") delta = e;
  }
  EXPECT_EQ(text, "abc ");
  EXPECT_EQ(delta["delta"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(delta["delta"]["stop_sequence"], "END");
}

TEST_F(ServerTest, AnthropicToolUse) {
  Start();
  auto r = Post("/v1/messages",
                {{"max_tokens", 200},
                 {"tools", {{{"name", "get_weather"}, {"input_schema", {{"type", "object"}}}}}},
                 {"messages", {{{"role", "user"},
                                {"content", R"(echo: <tool_call>{"name":"get_weather","arguments":{"city":"Rome"}}</tool_call>)"}}}}});
  ASSERT_TRUE(r);
  json j = json::parse(r->body);
  EXPECT_EQ(j["stop_reason"], "tool_use");
  EXPECT_EQ(j["content"][0]["type"], "tool_use");
  EXPECT_EQ(j["content"][0]["input"]["city"], "Rome");
}

TEST_F(ServerTest, CountTokensTokenizeDetokenizeTemplate) {
  Start();
  auto c = Post("/v1/messages/count_tokens", {{"messages", {{{"role", "user"}, {"content", "hey"}}}}});
  ASSERT_TRUE(c);
  EXPECT_EQ(json::parse(c->body)["input_tokens"], std::string("<|user|>hey\n<|assistant|>").size());
  auto t = Post("/tokenize", {{"content", "hi"}, {"add_special", false}});
  ASSERT_TRUE(t);
  EXPECT_EQ(json::parse(t->body)["tokens"], json({104, 105}));
  auto d = Post("/detokenize", {{"tokens", {104, 105}}});
  ASSERT_TRUE(d);
  EXPECT_EQ(json::parse(d->body)["content"], "hi");
  auto bad = Post("/detokenize", {{"tokens", {"x"}}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto a = Post("/apply-template", Chat("yo"));
  ASSERT_TRUE(a);
  EXPECT_EQ(json::parse(a->body)["prompt"], "<|user|>yo\n<|assistant|>");
}

TEST_F(ServerTest, BadRequestsAreShapedErrors) {
  Start();
  auto wrong = Post("/v1/chat/completions", Chat("x", {{"temperature", "hot"}}));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 400);
  json e = json::parse(wrong->body);
  EXPECT_EQ(e["error"]["param"], "temperature");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(e["error"]["code"].is_null());
  auto malformed = client_->Post("/v1/chat/completions", "{not json", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_NE(json::parse(malformed->body)["error"]["message"].get<std::string>().find("JSON"), std::string::npos);
  auto anth = Post("/v1/messages", {{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_TRUE(anth);
  EXPECT_EQ(anth->status, 400);
  EXPECT_EQ(json::parse(anth->body)["type"], "error");
  auto unknown = client_->Get("/v1/nope");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body)["error"]["type"], "not_found_error");
}

TEST_F(ServerTest, ContextOverflowNamesBothNumbers) {
  FakeBackend::Options f;
  f.context_length = 64;
  Start({}, f);
  auto r = Post("/v1/chat/completions", Chat(std::string(40, 'a'), {{"max_tokens", 30}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const std::string msg = json::parse(r->body)["error"]["message"];
  EXPECT_NE(msg.find("(30)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(64 tokens)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(62 tokens)"), std::string::npos) << msg;  // 40 + "<|user|>" + "\n<|assistant|>"
  auto too_long = Post("/v1/chat/completions", Chat(std::string(100, 'a')));
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 400);
}

TEST_F(ServerTest, OversizedBodyIs413) {
  ServeOptions o;
  o.max_body_bytes = 1024;
  Start(o);
  auto r = Post("/v1/chat/completions", Chat(std::string(4096, 'a')));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("1024"), std::string::npos);
}

TEST_F(ServerTest, FullQueueIs429) {
  ServeOptions o;
  o.max_queue = 1;
  Start(o);
  backend_->Hold();
  auto background = [&](int* status) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(10);
    auto r = c.Post("/v1/chat/completions", Chat("echo: q").dump(), "application/json");
    *status = r ? r->status : -1;
  };
  int s1 = 0, s2 = 0;
  std::thread t1(background, &s1);
  const bool started = ember::testing::PollUntil([&] { return backend_->generations_started() >= 1; });
  std::thread t2(background, &s2);
  const bool queued = started && ember::testing::PollUntil(
      [&] { return server_->context().models->LeaseLoaded().at(0).scheduler().stats().queued >= 1; });
  if (!queued) {
    backend_->Release();
    t1.join();
    t2.join();
    FAIL() << (started ? "the second request never queued" : "the first request never reached the backend");
  }
  auto r = Post("/v1/chat/completions", Chat("echo: q"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "rate_limit_error");
  backend_->Release();
  t1.join();
  t2.join();
  EXPECT_EQ(s1, 200);
  EXPECT_EQ(s2, 200);
}

TEST_F(ServerTest, ClientDisconnectCancelsGeneration) {
  FakeBackend::Options f;
  f.token_delay_ms = 2;
  Start({}, f);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = Chat("[long]", {{"stream", true}, {"max_tokens", 3000}}).dump();
  req.set_header("Content-Type", "application/json");
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 5; };
  auto r = client_->send(req);
  EXPECT_FALSE(r);  // we aborted it
  for (int i = 0; i < 500 && backend_->cancelled_generations() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(backend_->cancelled_generations(), 1);
  for (int i = 0; i < 500 && server_->context().models->LeaseLoaded().at(0).scheduler().stats().running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->context().models->LeaseLoaded().at(0).scheduler().stats().running, 0u);  // the lane is free again
}

TEST_F(ServerTest, ApiKeyAuth) {
  ServeOptions o;
  o.api_keys = {"k1"};
  Start(o);
  auto none = Post("/v1/chat/completions", Chat("echo: x"));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(json::parse(none->body)["error"]["type"], "authentication_error");
  auto anth = Post("/v1/messages", {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_TRUE(anth);
  EXPECT_EQ(anth->status, 401);
  EXPECT_EQ(json::parse(anth->body)["type"], "error");
  auto bearer = Post("/v1/chat/completions", Chat("echo: x"), {{"Authorization", "Bearer k1"}});
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200);
  auto xkey = Post("/v1/messages", {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}},
                   {{"x-api-key", "k1"}});
  ASSERT_TRUE(xkey);
  EXPECT_EQ(xkey->status, 200);
  auto health = client_->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
}

TEST_F(ServerTest, CorsLocalhostOnlyUnlessConfigured) {
  ServeOptions o;
  o.cors_origins = {"https://app.example.com"};
  Start(o);
  auto local = client_->Get("/health", {{"Origin", "http://localhost:3000"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  auto configured = client_->Get("/health", {{"Origin", "https://app.example.com"}});
  ASSERT_TRUE(configured);
  EXPECT_EQ(configured->get_header_value("Access-Control-Allow-Origin"), "https://app.example.com");
  auto evil = client_->Get("/health", {{"Origin", "https://evil.example.com"}});
  ASSERT_TRUE(evil);
  EXPECT_FALSE(evil->has_header("Access-Control-Allow-Origin"));
  auto preflight = client_->Options("/v1/chat/completions", {{"Origin", "http://127.0.0.1:5173"},
                                                             {"Access-Control-Request-Method", "POST"},
                                                             {"Access-Control-Request-Headers", "authorization,content-type"}});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Headers"), "authorization,content-type");
  auto bad_preflight = client_->Options("/v1/chat/completions", {{"Origin", "https://evil.example.com"}});
  ASSERT_TRUE(bad_preflight);
  EXPECT_EQ(bad_preflight->status, 403);
}

TEST_F(ServerTest, MetricsAndStats) {
  Start();
  ASSERT_TRUE(Post("/v1/chat/completions", Chat("echo: hello")));
  ASSERT_TRUE(Post("/v1/chat/completions", Chat("echo: hello")));
  ASSERT_TRUE(client_->Get("/v1/nope"));
  // The request counter is bumped by httplib's logger, which runs after the response is written, so a
  // client can see the reply before the count: poll (bounded) until the last request is counted.
  std::string text;
  for (int i = 0; i < 200; ++i) {
    auto m = client_->Get("/metrics");
    ASSERT_TRUE(m);
    ASSERT_EQ(m->status, 200);
    text = m->body;
    if (text.find("route=\"other\",status=\"404\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(text.find("ember_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ember_http_requests_total{route=\"other\",status=\"404\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ember_completion_tokens_total{route=\"/v1/chat/completions\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("ember_time_to_first_token_seconds_count{route=\"/v1/chat/completions\"} 2\n"), std::string::npos);
  EXPECT_EQ(text.find("ember_cache_"), std::string::npos) << "the fake has no cache tier to report";
  EXPECT_NE(text.find("# TYPE ember_http_request_duration_seconds histogram"), std::string::npos);
  auto s = client_->Get("/stats");
  ASSERT_TRUE(s);
  json j = json::parse(s->body);
  EXPECT_EQ(j["model"], "ember-fake");
  EXPECT_EQ(j["engine"]["name"], "fake");
  EXPECT_TRUE(j["cache"]["tiers"].empty());
  EXPECT_EQ(j["queue"]["completed"], 2);
  EXPECT_GE(j["uptime_s"].get<double>(), 0);
  // Token totals (the dashboard's throughput): every token reached the client, none came from a cache.
  EXPECT_EQ(j["tokens"]["completion"], 4);
  EXPECT_EQ(j["tokens"]["generated"], 4);
  EXPECT_GT(j["tokens"]["prompt"].get<int64_t>(), 0);
  EXPECT_EQ(j["tokens"]["cached"], 0);
  EXPECT_NE(text.find("ember_generated_tokens_total 4\n"), std::string::npos) << text;
}

TEST_F(ServerTest, ShutdownFlushesCacheAndRefusesWork) {
  Start();
  auto flush = Post("/admin/cache/flush", json::object());
  ASSERT_TRUE(flush);
  EXPECT_EQ(backend_->flush_count(), 1);
  ASSERT_TRUE(server_->Shutdown().ok());
  EXPECT_EQ(backend_->flush_count(), 2);
  EXPECT_FALSE(client_->Get("/health"));  // listener closed
}

}  // namespace
}  // namespace ember::server
