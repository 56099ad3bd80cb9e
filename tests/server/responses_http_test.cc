// /v1/responses in-process: HttpServer on an ephemeral port with the FakeBackend (recording the chat it
// is asked to render), httplib's client in front. Shapes, the stored conversation behind
// previous_response_id, instructions not carried over, store:false, tenancy between API keys, the stream's
// event sequence, incomplete replies, and stored responses surviving a server restart.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>

#include "server/http_server.h"
#include "server/forwarding_backend.h"

namespace ember::server {
namespace {

using nlohmann::json;

class RecordingBackend : public ForwardingBackend {
 public:
  StatusOr<std::vector<int32_t>> TokenizeChat(const ChatTemplateInput& in) const override {
    std::lock_guard<std::mutex> l(mu_);
    last_ = in.messages;
    return fake_.TokenizeChat(in);
  }
  Status Generate(const GenerationRequest& req, const TokenCallback& on_token, GenerationResult* out) override {
    if (fail_) {
      on_token(TokenEvent{1, "par", 0, {}});
      return Internal("the engine broke");
    }
    return fake_.Generate(req, on_token, out);
  }
  void set_fail(bool f) { fail_ = f; }
  std::vector<ChatMessage> last() const {
    std::lock_guard<std::mutex> l(mu_);
    return last_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<ChatMessage> last_;
  std::atomic<bool> fail_{false};
};

class ResponsesHttpTest : public ::testing::Test {
 protected:
  void Start(ServeOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    if (!backend_) backend_ = std::make_unique<RecordingBackend>();
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    if (!tmp_.empty()) std::filesystem::remove_all(tmp_);
  }
  std::string TempDir() {
    tmp_ = std::filesystem::temp_directory_path() / ("ember-responses-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(tmp_);
    return tmp_;
  }

  static httplib::Headers Key(const std::string& k) { return k.empty() ? httplib::Headers{} : httplib::Headers{{"Authorization", "Bearer " + k}}; }
  std::pair<int, json> Create(const json& body, const std::string& key = "") {
    auto r = client_->Post("/v1/responses", Key(key), body.dump(), "application/json");
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> Get(const std::string& id, const std::string& key = "") {
    auto r = client_->Get(("/v1/responses/" + id).c_str(), Key(key));
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> Delete(const std::string& id, const std::string& key = "") {
    auto r = client_->Delete(("/v1/responses/" + id).c_str(), Key(key));
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static std::string Text(const json& response) {
    std::string out;
    for (const json& item : response["output"]) {
      if (item["type"] != "message") continue;
      for (const json& part : item["content"]) out += part["text"].get<std::string>();
    }
    return out;
  }

  std::unique_ptr<RecordingBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
  std::string tmp_;
};

TEST_F(ResponsesHttpTest, CreateGetDelete) {
  Start();
  auto [status, r] = Create({{"model", "m"}, {"input", "echo: hello there"}});
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["error"].is_null());
  EXPECT_TRUE(r["incomplete_details"].is_null());
  ASSERT_EQ(r["output"].size(), 1u);
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["role"], "assistant");
  EXPECT_EQ(r["output"][0]["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(r["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(Text(r), "hello there");
  const json& u = r["usage"];
  EXPECT_GT(u["input_tokens"].get<int>(), 0);
  EXPECT_EQ(u["input_tokens_details"]["cached_tokens"], 0);  // the fake has no cache
  EXPECT_GT(u["output_tokens"].get<int>(), 0);
  EXPECT_EQ(u["total_tokens"], u["input_tokens"].get<int>() + u["output_tokens"].get<int>());
  EXPECT_EQ(u["output_tokens_details"]["reasoning_tokens"], 0);

  auto [gs, got] = Get(r["id"]);
  EXPECT_EQ(gs, 200);
  EXPECT_EQ(got, r);
  auto [ds, del] = Delete(r["id"]);
  EXPECT_EQ(ds, 200);
  EXPECT_EQ(del, (json{{"id", r["id"]}, {"object", "response"}, {"deleted", true}}));
  auto [gs2, gone] = Get(r["id"]);
  EXPECT_EQ(gs2, 404);
  EXPECT_EQ(gone["error"]["type"], "invalid_request_error");
  EXPECT_NE(gone["error"]["message"].get<std::string>().find(r["id"].get<std::string>()), std::string::npos);
  EXPECT_EQ(Delete(r["id"]).first, 404);
  EXPECT_EQ(Get("resp_unknown").first, 404);
  EXPECT_EQ(Get("resp_a/b").first, 404);  // one segment only
}

TEST_F(ResponsesHttpTest, PreviousResponseIdPrependsTheConversationButNotItsInstructions) {
  Start();
  auto [s1, first] = Create({{"input", "echo: one"}, {"instructions", "be brief"}});
  ASSERT_EQ(s1, 200);
  std::vector<ChatMessage> m = backend_->last();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "be brief");
  auto [s2, second] = Create({{"input", "echo: two"}, {"previous_response_id", first["id"]}});
  ASSERT_EQ(s2, 200) << second.dump();
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  EXPECT_TRUE(second["instructions"].is_null());
  m = backend_->last();
  ASSERT_EQ(m.size(), 3u);  // no system turn: instructions are not carried over
  EXPECT_EQ(m[0].role, "user");
  EXPECT_EQ(m[0].content, "echo: one");
  EXPECT_EQ(m[1].role, "assistant");
  EXPECT_EQ(m[1].content, "one");
  EXPECT_EQ(m[2].content, "echo: two");
  // A third turn with new instructions: they come first, the whole chain after.
  auto [s3, third] = Create({{"input", "echo: three"}, {"instructions", "new rules"}, {"previous_response_id", second["id"]}});
  ASSERT_EQ(s3, 200);
  m = backend_->last();
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].content, "new rules");
  EXPECT_EQ(m[4].content, "two");
  EXPECT_EQ(m[5].content, "echo: three");
  // Each stored response keeps its whole conversation: the chain survives deleting an earlier link.
  EXPECT_EQ(Delete(first["id"]).first, 200);
  EXPECT_EQ(Create({{"input", "echo: four"}, {"previous_response_id", third["id"]}}).first, 200);
  EXPECT_EQ(backend_->last().size(), 7u);
}

TEST_F(ResponsesHttpTest, UnknownPreviousResponseIsA400NamingIt) {
  Start();
  auto [status, e] = Create({{"input", "x"}, {"previous_response_id", "resp_nope"}});
  EXPECT_EQ(status, 400);
  EXPECT_EQ(e["error"]["param"], "previous_response_id");
  EXPECT_EQ(e["error"]["code"], "previous_response_not_found");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("resp_nope"), std::string::npos);
}

TEST_F(ResponsesHttpTest, StoreFalseIsNotKept) {
  Start();
  auto [status, r] = Create({{"input", "echo: hi"}, {"store", false}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["store"], false);
  EXPECT_EQ(Get(r["id"]).first, 404);
  EXPECT_EQ(Create({{"input", "x"}, {"previous_response_id", r["id"]}}).first, 400);
}

TEST_F(ResponsesHttpTest, AnotherKeyCannotSeeUseOrDeleteAResponse) {
  ServeOptions o;
  o.api_keys = {"key-a", "key-b"};
  Start(o);
  auto [status, r] = Create({{"input", "echo: secret"}}, "key-a");
  ASSERT_EQ(status, 200);
  const std::string id = r["id"];
  EXPECT_EQ(Get(id, "key-b").first, 404);
  EXPECT_EQ(Create({{"input", "x"}, {"previous_response_id", id}}, "key-b").first, 400);
  EXPECT_EQ(Delete(id, "key-b").first, 404);
  EXPECT_EQ(Get(id, "").first, 401);  // no key at all: refused before the store is asked
  EXPECT_EQ(Get(id, "key-a").first, 200);
  EXPECT_EQ(Create({{"input", "echo: more"}, {"previous_response_id", id}}, "key-a").first, 200);
}

TEST_F(ResponsesHttpTest, BadBodiesAre400sNamingTheField) {
  Start();
  auto [s1, e1] = Create({{"model", "m"}});
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["error"]["param"], "input");
  auto [s2, e2] = Create({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}}}}}}}});
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2["error"]["param"], "input[0].content[0].type");
}

TEST_F(ResponsesHttpTest, ContextOverflowNamesTheResponsesFields) {
  Start();  // the fake's context is 4096 byte tokens
  auto [s1, e1] = Create({{"input", "hi"}, {"max_output_tokens", 5000}});
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["error"]["param"], "max_output_tokens");
  EXPECT_NE(e1["error"]["message"].get<std::string>().find("max_output_tokens (5000)"), std::string::npos)
      << e1.dump();
  auto [s2, e2] = Create({{"input", std::string(5000, 'x')}});
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2["error"]["param"], "input");
}

TEST_F(ResponsesHttpTest, MaxOutputTokensMakesItIncomplete) {
  Start();
  auto [status, r] = Create({{"input", "tell me more"}, {"max_output_tokens", 3}});  // 8+ words
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
  EXPECT_EQ(r["usage"]["output_tokens"], 3);
  EXPECT_EQ(r["max_output_tokens"], 3);
}

TEST_F(ResponsesHttpTest, ToolCallsAreFunctionCallItems) {
  Start();
  const json tools = {{{"type", "function"}, {"name", "get_weather"}, {"parameters", {{"type", "object"}}}}};
  auto [status, r] = Create(
      {{"input", "echo: <tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}</tool_call>"}, {"tools", tools}});
  ASSERT_EQ(status, 200) << r.dump();
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const json& call = r["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), (json{{"city", "Oslo"}}));
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(r["tools"], tools);
  // The result goes back as a function_call_output item after previous_response_id.
  auto [s2, r2] = Create({{"previous_response_id", r["id"]},
                          {"input", {{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "sunny"}}}},
                          {"tools", tools}});
  ASSERT_EQ(s2, 200) << r2.dump();
  std::vector<ChatMessage> m = backend_->last();
  ASSERT_EQ(m.size(), 3u);
  ASSERT_EQ(m[1].tool_calls.size(), 1u);
  EXPECT_EQ(m[1].tool_calls[0].id, call["call_id"]);
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, call["call_id"]);
  EXPECT_EQ(m[2].name, "get_weather");
}

// The SSE body's events as (name, data) pairs.
std::vector<std::pair<std::string, json>> Events(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while ((pos = body.find("event: ", pos)) != std::string::npos) {
    const size_t nl = body.find('\n', pos);
    const size_t data = body.find("data: ", nl);
    const size_t end = body.find("\n\n", data);
    out.emplace_back(body.substr(pos + 7, nl - pos - 7), json::parse(body.substr(data + 6, end - data - 6)));
    pos = end;
  }
  return out;
}

TEST_F(ResponsesHttpTest, StreamingEventSequence) {
  Start();
  auto res = client_->Post("/v1/responses", json{{"input", "echo: hello streaming world"}, {"stream", true}}.dump(),
                           "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const auto events = Events(res->body);
  ASSERT_GE(events.size(), 9u);
  std::vector<std::string> names;
  std::string deltas;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].second["type"], events[i].first);
    EXPECT_EQ(events[i].second["sequence_number"], i);
    if (events[i].first == "response.output_text.delta") {
      deltas += events[i].second["delta"].get<std::string>();
      continue;
    }
    names.push_back(events[i].first);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.content_part.added", "response.output_text.done",
                                             "response.content_part.done", "response.output_item.done",
                                             "response.completed"}));
  EXPECT_EQ(deltas, "hello streaming world");
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  const json& done = events.back().second["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(Text(done), deltas);
  EXPECT_GT(done["usage"]["output_tokens"].get<int>(), 0);
  // Stored before the last event: GET right after finds it.
  auto [gs, got] = Get(done["id"]);
  EXPECT_EQ(gs, 200);
  EXPECT_EQ(got, done);
}

TEST_F(ResponsesHttpTest, StreamingToolCall) {
  Start();
  const json tools = {{{"type", "function"}, {"name", "f"}, {"parameters", {{"type", "object"}}}}};
  auto res = client_->Post("/v1/responses",
                           json{{"input", "echo: <tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call>"},
                                {"tools", tools},
                                {"stream", true}}
                               .dump(),
                           "application/json");
  ASSERT_TRUE(res);
  const auto events = Events(res->body);
  std::vector<std::string> names;
  for (const auto& [name, data] : events) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done", "response.output_item.done",
                                             "response.completed"}));
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[2].second["item"]["type"], "function_call");
  EXPECT_EQ(events[2].second["item"]["status"], "in_progress");
  EXPECT_EQ(json::parse(events[4].second["arguments"].get<std::string>()), (json{{"a", 1}}));
  EXPECT_EQ(events[4].second["name"], "f");
  EXPECT_EQ(events[5].second["item"]["call_id"], events.back().second["response"]["output"][0]["call_id"]);
}

TEST_F(ResponsesHttpTest, StreamingIncompleteEndsWithResponseIncomplete) {
  Start();
  auto res = client_->Post("/v1/responses",
                           json{{"input", "tell me more"}, {"max_output_tokens", 2}, {"stream", true}}.dump(), "application/json");
  ASSERT_TRUE(res);
  const auto events = Events(res->body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().first, "response.incomplete");
  EXPECT_EQ(events.back().second["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

TEST_F(ResponsesHttpTest, AFailedGenerationIsAnErrorEventThenResponseFailedAndIsNotStored) {
  backend_ = std::make_unique<RecordingBackend>();
  backend_->set_fail(true);
  Start();
  auto res = client_->Post("/v1/responses", json{{"input", "hi"}, {"stream", true}}.dump(), "application/json");
  ASSERT_TRUE(res);
  const auto events = Events(res->body);
  ASSERT_GE(events.size(), 2u);
  const auto& error = events[events.size() - 2];
  EXPECT_EQ(error.first, "error");
  EXPECT_EQ(error.second["code"], "server_error");
  EXPECT_NE(error.second["message"].get<std::string>().find("the engine broke"), std::string::npos);
  const auto& failed = events.back();
  EXPECT_EQ(failed.first, "response.failed");
  EXPECT_EQ(failed.second["response"]["status"], "failed");
  EXPECT_EQ(failed.second["response"]["error"]["code"], "server_error");
  EXPECT_EQ(Get(failed.second["response"]["id"]).first, 404);
  // Not streaming: an ordinary 500 in OpenAI's shape.
  auto [status, e] = Create({{"input", "hi"}});
  EXPECT_EQ(status, 500);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("the engine broke"), std::string::npos);
}

TEST_F(ResponsesHttpTest, StoredResponsesSurviveARestart) {
  ServeOptions o;
  o.ssd_cache_dir = TempDir();
  Start(o);
  auto [status, r] = Create({{"input", "echo: remember me"}});
  ASSERT_EQ(status, 200);
  ASSERT_TRUE(server_->Shutdown().ok());
  server_.reset();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(tmp_) / "responses" /
                                      (r["id"].get<std::string>() + ".json")));
  Start(o);
  auto [gs, got] = Get(r["id"]);
  EXPECT_EQ(gs, 200);
  EXPECT_EQ(got, r);
  EXPECT_EQ(Create({{"input", "echo: again"}, {"previous_response_id", r["id"]}}).first, 200);
  EXPECT_EQ(backend_->last().size(), 3u);
}

TEST_F(ResponsesHttpTest, StoreSizeZeroKeepsNothing) {
  ServeOptions o;
  o.responses_store_bytes = 0;
  Start(o);
  auto [status, r] = Create({{"input", "echo: hi"}});
  ASSERT_EQ(status, 200);  // answered all the same
  EXPECT_EQ(Get(r["id"]).first, 404);
}

}  // namespace
}  // namespace ember::server
