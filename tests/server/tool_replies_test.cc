// Forced tool calls through the whole HTTP layer on the FakeBackend (scripted replies: its `echo:`), both
// APIs, streaming and not: the forced choice reaches the backend as a grammar in the backend's syntax, the
// reply comes back as tool calls, and parallel_tool_calls false leaves one.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "server/fake_backend.h"
#include "server/http_server.h"

namespace ember::server {
namespace {

using nlohmann::json;

const json kTools = {{{"type", "function"},
                      {"function", {{"name", "get_weather"},
                                    {"parameters", {{"type", "object"},
                                                    {"properties", {{"city", {{"type", "string"}}}}},
                                                    {"required", {"city"}}}}}}},
                     {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
const char* kTwoCalls = "echo: <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                        "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

class ToolReplies : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    server_ = std::make_unique<HttpServer>(o, &backend_);
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  json Post(const std::string& path, const json& body, int want = 200) {
    httplib::Result r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, want) << r->body;
    return r->headers.count("Content-Type") && r->get_header_value("Content-Type").starts_with("text/event-stream")
               ? json(r->body)
               : json::parse(r->body);
  }
  static json Chat(const std::string& user, json extra) {
    json body = {{"messages", {{{"role", "user"}, {"content", user}}}}, {"tools", kTools}};
    body.update(extra);
    return body;
  }
  // The JSON payloads of an SSE body, in order.
  static std::vector<json> Events(const std::string& body) {
    std::vector<json> out;
    for (size_t pos = 0; (pos = body.find("data: ", pos)) != std::string::npos;) {
      const size_t end = body.find("\n\n", pos);
      const std::string data = body.substr(pos + 6, end - pos - 6);
      if (data != "[DONE]") out.push_back(json::parse(data));
      pos = end;
    }
    return out;
  }

  FakeBackend backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ToolReplies, ForcedChoiceReachesTheBackendAsItsSyntaxGrammar) {
  Post("/v1/chat/completions", Chat("echo: hi", {{"tool_choice", "required"}}));
  std::shared_ptr<const grammar::Grammar> g = backend_.last_request().grammar;
  ASSERT_NE(g, nullptr);
  // The fake writes Hermes blocks (tool_call_syntax()), so the grammar holds those.
  EXPECT_TRUE(grammar::Matches(*g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar::Matches(*g, "{\"name\": \"get_time\", \"parameters\": {}}"));

  Post("/v1/chat/completions", Chat("echo: hi", {{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}));
  g = backend_.last_request().grammar;
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(grammar::Matches(*g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));

  Post("/v1/messages", {{"max_tokens", 8}, {"messages", {{{"role", "user"}, {"content", "echo: hi"}}}},
                        {"tools", {{{"name", "get_time"}}}}, {"tool_choice", {{"type", "any"}}}});
  EXPECT_NE(backend_.last_request().grammar, nullptr);

  for (const char* choice : {"auto", "none"}) {
    Post("/v1/chat/completions", Chat("echo: hi", {{"tool_choice", choice}}));
    EXPECT_EQ(backend_.last_request().grammar, nullptr) << choice;
  }
}

TEST_F(ToolReplies, ParallelToolCallsFalseKeepsOneCall) {
  for (bool parallel : {true, false}) {
    json r = Post("/v1/chat/completions", Chat(kTwoCalls, {{"parallel_tool_calls", parallel}}));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(r["choices"][0]["message"]["tool_calls"].size(), parallel ? 2u : 1u) << r.dump();

    json s = Post("/v1/chat/completions", Chat(kTwoCalls, {{"parallel_tool_calls", parallel}, {"stream", true}}));
    size_t calls = 0;
    for (const json& e : Events(s.get<std::string>())) {
      if (e["choices"].empty()) continue;
      calls += e["choices"][0]["delta"].value("tool_calls", json::array()).size();
    }
    EXPECT_EQ(calls, parallel ? 2u : 1u);

    json a = Post("/v1/messages", {{"max_tokens", 64}, {"messages", {{{"role", "user"}, {"content", kTwoCalls}}}},
                                   {"tools", {{{"name", "get_weather"}}, {{"name", "get_time"}}}},
                                   {"tool_choice", {{"type", "auto"}, {"disable_parallel_tool_use", !parallel}}}});
    EXPECT_EQ(a["stop_reason"], "tool_use");
    EXPECT_EQ(a["content"].size(), parallel ? 2u : 1u) << a.dump();
  }
}

TEST_F(ToolReplies, StreamedCallsAreWellFormedDeltas) {
  json s = Post("/v1/chat/completions", Chat(kTwoCalls, {{"tool_choice", "required"}, {"stream", true}}));
  std::vector<json> calls;
  std::string finish;
  for (const json& e : Events(s.get<std::string>())) {
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) {
      EXPECT_EQ(d["content"], "");  // only the role chunk's empty text
    }
    for (const json& c : d.value("tool_calls", json::array())) calls.push_back(c);
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(calls.size(), 2u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i]["index"], i);
    EXPECT_FALSE(calls[i]["id"].get<std::string>().empty());
    EXPECT_EQ(calls[i]["type"], "function");
    EXPECT_TRUE(json::parse(calls[i]["function"]["arguments"].get<std::string>()).is_object());
  }
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[1]["function"]["name"], "get_time");

  // Anthropic: one tool_use block per call, its input streamed as input_json_delta, stop_reason tool_use.
  json a = Post("/v1/messages", {{"max_tokens", 64}, {"stream", true},
                                 {"messages", {{{"role", "user"}, {"content", kTwoCalls}}}},
                                 {"tools", {{{"name", "get_weather"}}, {{"name", "get_time"}}}},
                                 {"tool_choice", {{"type", "any"}}}});
  std::vector<std::string> types;
  std::string partial, stop_reason;
  for (const json& e : Events(a.get<std::string>())) {
    types.push_back(e["type"]);
    if (e["type"] == "content_block_start") {
      EXPECT_EQ(e["content_block"]["type"], "tool_use") << e.dump();
    }
    if (e["type"] == "content_block_delta") partial += e["delta"]["partial_json"].get<std::string>() + "|";
    if (e["type"] == "message_delta") stop_reason = e["delta"]["stop_reason"];
  }
  EXPECT_EQ(stop_reason, "tool_use");
  EXPECT_EQ(partial, "{\"city\":\"Paris\"}|{}|");
  EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_start"), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_stop"), 2);
}

// Every tool's schema is compiled into one grammar, so a forced choice over very many tools can pass the
// grammar limits (GbnfLimits): a 400 naming the limit, and the server goes on. Named, only one is compiled.
TEST_F(ToolReplies, TooManyForcedToolsAreA400NamingTheLimit) {
  json tools = json::array();
  for (int i = 0; i < 300; ++i) {
    tools.push_back({{"type", "function"},
                     {"function", {{"name", "tool_" + std::to_string(i)},
                                   {"parameters", {{"type", "object"},
                                                   {"properties", {{"q", {{"type", "string"}, {"maxLength", 40}}}}}}}}}});
  }
  json body = Chat("echo: hi", {{"tools", tools}, {"tool_choice", "required"}});
  json r = Post("/v1/chat/completions", body, 400);
  EXPECT_EQ(r["error"]["param"], "tool_choice") << r.dump();
  EXPECT_NE(r["error"]["message"].get<std::string>().find("limit max_"), std::string::npos) << r.dump();
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "tool_299"}}}};
  Post("/v1/chat/completions", body, 200);
}

}  // namespace
}  // namespace ember::server
