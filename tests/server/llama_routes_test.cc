// llama-server's native routes and the Anthropic routes' error shapes through the whole HTTP layer
// (HttpServer on an ephemeral port, the FakeBackend behind it: byte tokens, id 256 = BOS, "echo:" scripts
// the reply).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>

#include "server/fake_backend.h"
#include "server/http_server.h"

namespace ember::server {
namespace {

using nlohmann::json;

class LlamaRoutesTest : public ::testing::Test {
 protected:
  void Start(ServeOptions o = {}, FakeBackend::Options f = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    o.max_body_bytes = 4096;
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
  static std::vector<json> SseData(const std::string& body) {
    std::vector<json> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const size_t end = body.find("\n\n", pos);
      out.push_back(json::parse(body.substr(pos + 6, end - pos - 6)));
      pos = end;
    }
    return out;
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(LlamaRoutesTest, CompletionReturnsLlamaServersObject) {
  Start();
  auto r = Post("/completion", {{"prompt", "echo: hello"}, {"n_predict", 32}, {"return_tokens", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["content"], "hello");  // the fake's pieces: "hel", "lo"
  EXPECT_EQ(j["stop"], true);
  EXPECT_EQ(j["stop_type"], "eos");
  EXPECT_EQ(j["tokens_evaluated"], 12);  // BOS + 11 bytes
  EXPECT_EQ(j["tokens"].size(), 2u);
  EXPECT_EQ(j["tokens_predicted"], 2);
  EXPECT_EQ(j["timings"]["prompt_n"], 12);
  EXPECT_EQ(j["timings"]["predicted_n"], 2);
  EXPECT_EQ(j["model"], "ember-fake");
  EXPECT_EQ(j["prompt"], "echo: hello");
  // Token ids and mixed prompts: the BOS only when the prompt starts with text.
  auto ids = Post("/completion", {{"prompt", {101, 99, 104, 111, 58, 32, 104, 105}}, {"n_predict", 8}});
  ASSERT_EQ(ids->status, 200) << ids->body;
  EXPECT_EQ(json::parse(ids->body)["content"], "hi");
  EXPECT_EQ(json::parse(ids->body)["tokens_evaluated"], 8);
  auto mixed = Post("/completion", {{"prompt", json::array({101, "cho: yo"})}, {"n_predict", 8}});
  ASSERT_EQ(mixed->status, 200) << mixed->body;
  EXPECT_EQ(json::parse(mixed->body)["content"], "yo");
  EXPECT_EQ(json::parse(mixed->body)["tokens_evaluated"], 8);
}

TEST_F(LlamaRoutesTest, CompletionStopsAtLimitsAndStopWords) {
  FakeBackend::Options f;
  f.context_length = 64;
  Start({}, f);
  auto limit = Post("/completion", {{"prompt", "echo: " + std::string(24, 'a')}, {"n_predict", 5}});
  ASSERT_EQ(limit->status, 200) << limit->body;
  EXPECT_EQ(json::parse(limit->body)["stop_type"], "limit");
  EXPECT_EQ(json::parse(limit->body)["tokens_predicted"], 5);
  EXPECT_EQ(json::parse(limit->body)["truncated"], false);
  // n_predict beyond the context: generation runs to the context's end (truncated), no 400.
  // (BOS + 52 prompt bytes leave 11 positions; the echo would be 15 pieces.)
  auto full = Post("/completion", {{"prompt", "echo: " + std::string(46, 'b')}, {"n_predict", 1000}});
  ASSERT_EQ(full->status, 200) << full->body;
  json fj = json::parse(full->body);
  EXPECT_EQ(fj["tokens_predicted"].get<int>() + fj["tokens_evaluated"].get<int>(), 64);
  EXPECT_EQ(fj["truncated"], true);
  auto word = Post("/completion", {{"prompt", "echo: one two"}, {"stop", {"two"}}});
  ASSERT_EQ(word->status, 200) << word->body;
  EXPECT_EQ(json::parse(word->body)["stop_type"], "word");
  EXPECT_EQ(json::parse(word->body)["stopping_word"], "two");
  EXPECT_EQ(json::parse(word->body)["content"], "one ");
  // A prompt the context cannot hold: llama-server's message.
  auto big = Post("/completion", {{"prompt", std::string(100, 'a')}});
  ASSERT_EQ(big->status, 400);
  EXPECT_NE(json::parse(big->body)["error"]["message"].get<std::string>().find("exceeds the available context size"),
            std::string::npos);
  // n_predict 0: the prompt is evaluated, no text.
  auto zero = Post("/completion", {{"prompt", "echo: hidden"}, {"n_predict", 0}});
  ASSERT_EQ(zero->status, 200) << zero->body;
  EXPECT_EQ(json::parse(zero->body)["content"], "");
  EXPECT_EQ(json::parse(zero->body)["tokens_predicted"], 0);
}

TEST_F(LlamaRoutesTest, CompletionStreamsDataChunksThenTheFinalObject) {
  Start();
  auto r = Post("/completion", {{"prompt", "echo: streaming text"}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(r->body.find("[DONE]"), std::string::npos);  // llama-server's native stream has no [DONE]
  std::vector<json> chunks = SseData(r->body);
  ASSERT_GE(chunks.size(), 3u);
  std::string text;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["stop"], false);
    EXPECT_FALSE(chunks[i]["tokens"].empty());
    text += chunks[i]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "streaming text");
  const json& last = chunks.back();
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["content"], "");
  EXPECT_EQ(last["stop_type"], "eos");
  EXPECT_EQ(last["timings"]["predicted_n"], last["tokens_predicted"]);
}

TEST_F(LlamaRoutesTest, CompletionErrorsNameTheField) {
  Start();
  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {json{{"prompt", 3}}, "prompt"},
           {json{{"prompt", "x"}, {"n_predict", "8"}}, "n_predict"},
           {json{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
           {json{{"prompt", {"a", "b"}}}, "prompt"},
           {json{{"prompt", "x"}, {"id_slot", 9}}, "id_slot"},
           {json{{"prompt", "x"}, {"mirostat", 2}}, "mirostat"}}) {
    auto r = Post("/completion", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body.dump();
    EXPECT_EQ(json::parse(r->body)["error"]["param"], param) << body.dump();
  }
}

TEST_F(LlamaRoutesTest, TokenizeDetokenizePieces) {
  Start();
  auto plain = Post("/tokenize", {{"content", "ab"}});
  ASSERT_EQ(plain->status, 200);
  EXPECT_EQ(json::parse(plain->body)["tokens"], json::array({97, 98}));  // no BOS by default
  auto bos = Post("/tokenize", {{"content", "ab"}, {"add_special", true}});
  EXPECT_EQ(json::parse(bos->body)["tokens"][0], 256);
  // The fake's tokens are bytes: é (C3 A9) is two invalid-alone pieces, given as byte lists.
  auto pieces = Post("/tokenize", {{"content", "a\xC3\xA9"}, {"with_pieces", true}});
  ASSERT_EQ(pieces->status, 200);
  json p = json::parse(pieces->body)["tokens"];
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], json({{"id", 97}, {"piece", "a"}}));
  EXPECT_EQ(p[1]["piece"], json::array({0xC3}));
  EXPECT_EQ(p[2]["piece"], json::array({0xA9}));
  auto detok = Post("/detokenize", {{"tokens", {104, 105}}});
  EXPECT_EQ(json::parse(detok->body)["content"], "hi");
  EXPECT_EQ(json::parse(Post("/tokenize", {{"content", 5}})->body)["error"]["param"], "content");
  EXPECT_EQ(json::parse(Post("/detokenize", {{"tokens", {1, "x"}}})->body)["error"]["param"], "tokens[1]");
}

TEST_F(LlamaRoutesTest, PropsSlotsModelsHealth) {
  ServeOptions o;
  o.model_alias = "tiny";
  o.default_seed = 42;
  o.n_predict = 64;
  FakeBackend::Options f;
  f.max_parallel = 2;
  f.context_length = 256;
  Start(o, f);
  json props = json::parse(client_->Get("/props")->body);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(props["default_generation_settings"]["params"]["seed"], 42);
  EXPECT_EQ(props["default_generation_settings"]["params"]["n_predict"], 64);
  EXPECT_EQ(props["model_alias"], "tiny");
  auto slots = client_->Get("/slots");
  ASSERT_EQ(slots->status, 200);
  json s = json::parse(slots->body);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1]["id"], 1);
  EXPECT_EQ(s[0]["is_processing"], false);
  EXPECT_EQ(s[0]["n_ctx"], 256);
  json models = json::parse(client_->Get("/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["aliases"], json::array({"tiny"}));
  EXPECT_EQ(models["data"][0]["tags"], json::array());
  EXPECT_EQ(client_->Get("/v1/health")->status, 200);
  // --n-predict is the default max tokens of the other APIs too.
  auto chat = Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "[long]"}}}}});
  ASSERT_EQ(chat->status, 200) << chat->body;
  EXPECT_EQ(json::parse(chat->body)["usage"]["completion_tokens"], 64);
  // ... and OpenAI replies carry llama-server's timings.
  EXPECT_EQ(json::parse(chat->body)["timings"]["predicted_n"], 64);
}

TEST_F(LlamaRoutesTest, NoSlotsAndNoMetricsAre501) {
  ServeOptions o;
  o.slots_endpoint = false;
  o.metrics_endpoint = false;
  Start(o);
  auto slots = client_->Get("/slots");
  EXPECT_EQ(slots->status, 501);
  EXPECT_EQ(json::parse(slots->body)["error"]["type"], "not_supported_error");
  EXPECT_EQ(client_->Get("/metrics")->status, 501);
}

TEST_F(LlamaRoutesTest, MetricsCarryLlamacppNamesAndTheStartHeader) {
  Start();
  ASSERT_EQ(Post("/completion", {{"prompt", "echo: abcdef"}})->status, 200);
  auto m = client_->Get("/metrics");
  ASSERT_EQ(m->status, 200);
  EXPECT_FALSE(m->get_header_value("Process-Start-Time-Unix").empty());
  EXPECT_NE(m->body.find("\nllamacpp:tokens_predicted_total 2\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("\nllamacpp:prompt_tokens_total 13\n"), std::string::npos);
  EXPECT_NE(m->body.find("# TYPE llamacpp:requests_processing gauge"), std::string::npos);
  EXPECT_NE(m->body.find("ember_completion_tokens_total"), std::string::npos);  // beside ember's own
}

// Every 4xx on /v1/messages* is Anthropic's {"type":"error","error":{type,message}}.
TEST_F(LlamaRoutesTest, AnthropicErrorShapeForEvery4xx) {
  ServeOptions o;
  o.api_keys = {"k"};
  o.max_queue = 0;
  FakeBackend::Options f;
  f.token_delay_ms = 20;
  Start(o, f);
  httplib::Headers key = {{"x-api-key", "k"}};
  auto expect_shape = [](const httplib::Result& r, int status, const std::string& type) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    json j = json::parse(r->body);
    EXPECT_EQ(j["type"], "error") << r->body;
    EXPECT_EQ(j["error"]["type"], type) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
  };
  const json msg = {{"max_tokens", 8}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  expect_shape(Post("/v1/messages", msg), 401, "authentication_error");
  expect_shape(client_->Get("/v1/messages/nope", key), 404, "not_found_error");
  auto wrong_method = client_->Get("/v1/messages", key);
  expect_shape(wrong_method, 405, "invalid_request_error");
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
  expect_shape(client_->Post("/v1/messages", key, std::string(5000, ' '), "application/json"), 413, "request_too_large");
  expect_shape(Post("/v1/messages", {{"max_tokens", 8}, {"messages", json::array()}}, key), 400, "invalid_request_error");
  expect_shape(Post("/v1/messages/count_tokens", {{"messages", "hi"}}, key), 400, "invalid_request_error");
  // 429: the one lane is busy and nothing may wait (--max-queue 0).
  json slow = msg;
  slow["messages"][0]["content"] = "[long]";
  slow["max_tokens"] = 200;
  std::thread busy([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(20);
    (void)c.Post("/v1/messages", key, slow.dump(), "application/json");
  });
  bool saw_429 = false;
  for (int i = 0; i < 200 && !saw_429; ++i) {
    auto limited = Post("/v1/messages", msg, key);
    saw_429 = limited && limited->status == 429;
    if (saw_429) expect_shape(limited, 429, "rate_limit_error");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(saw_429);
  busy.join();
  // OpenAI routes keep the OpenAI shape for the same errors.
  auto openai = client_->Get("/v1/chat/completions", key);
  ASSERT_EQ(openai->status, 405);
  EXPECT_EQ(json::parse(openai->body)["error"]["type"], "invalid_request_error");
}

TEST_F(LlamaRoutesTest, AnthropicCountTokensCountsWhatGenerationWouldSee) {
  Start();
  const json base = {{"messages", {{{"role", "user"}, {"content", "hello"}}}}};
  auto plain = Post("/v1/messages/count_tokens", base);
  ASSERT_EQ(plain->status, 200) << plain->body;
  const int n = json::parse(plain->body)["input_tokens"];
  json with_system = base;
  with_system["system"] = "be brief";
  const int ns = json::parse(Post("/v1/messages/count_tokens", with_system)->body)["input_tokens"];
  EXPECT_GT(ns, n);
  json with_tools = base;
  with_tools["tools"] = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}};
  EXPECT_GT(json::parse(Post("/v1/messages/count_tokens", with_tools)->body)["input_tokens"].get<int>(), n);
  // The same prompt a generation gets: its usage.input_tokens matches (the fake has no cache).
  json gen = base;
  gen["max_tokens"] = 4;
  EXPECT_EQ(json::parse(Post("/v1/messages", gen)->body)["usage"]["input_tokens"], n);
  EXPECT_EQ(json::parse(plain->body).size(), 1u);  // only input_tokens
}

}  // namespace
}  // namespace ember::server
