// Several models behind one in-process HttpServer (docs/server.md, "Several models"): FakeModelLoader
// models a, b, c (and the unrunnable d), selected by each request's `model` on every API; the 404 naming
// the models in both error flavours; /v1/models, /v1/models/{id}, /models, /health, /stats and /metrics
// in their several-models shapes; the 503 (busy, with Retry-After), 507 (too large) and 500 (failed load)
// of model selection; llama-server's routes picking their model.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "server/fake_model_loader.h"
#include "server/http_server.h"
#include "server/model_router.h"

namespace ember::server {
namespace {

using nlohmann::json;

// FakeModelLoader, but the model named "broken" fails to load.
class Loader final : public ModelLoader {
 public:
  explicit Loader(FakeModelLoader::Options o) : fake_(std::move(o)) {}
  StatusOr<ModelCost> Estimate(const ModelSpec& spec) override { return fake_.Estimate(spec); }
  StatusOr<std::unique_ptr<InferenceBackend>> Load(const ModelSpec& spec, uint64_t kv) override {
    if (spec.name == "broken") return Corrupt("bad magic 'GGUX'");
    return fake_.Load(spec, kv);
  }
  FakeModelLoader fake_;
};

class MultiModelServer : public ::testing::Test {
 protected:
  void Start(ModelRouter::Options ro = {}, FakeModelLoader::Options f = {}, std::vector<std::string> names = {"a", "b", "c", "broken"}) {
    loader_ = std::make_unique<Loader>(f);
    std::vector<ModelSpec> specs = loader_->fake_.Specs(names);
    ModelSpec d;
    d.name = "d";
    d.path = "/models/d.gguf";
    d.runnable = false;
    d.why_not = "architecture 'mamba' is not supported";
    specs.push_back(d);
    router_ = std::make_unique<ModelRouter>(specs, loader_.get(), ro);
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    server_ = std::make_unique<HttpServer>(o, router_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    router_.reset();
  }
  httplib::Result Post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), body.dump(), "application/json");
  }
  static json Chat(const std::string& model, const std::string& user = "echo: hi") {
    json body = {{"messages", {{{"role", "user"}, {"content", user}}}}};
    if (!model.empty()) body["model"] = model;
    return body;
  }
  json GetJson(const std::string& path, int want_status = 200) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << r->body;
    return json::parse(r->body);
  }
  json ModelEntry(const json& list, const std::string& id) {
    for (const json& m : list) {
      if (m["id"] == id || m.value("name", "") == id) return m;
    }
    ADD_FAILURE() << "no " << id << " in " << list.dump();
    return json();
  }

  std::unique_ptr<Loader> loader_;
  std::unique_ptr<ModelRouter> router_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MultiModelServer, EachRequestIsServedByTheModelItNames) {
  Start();
  for (const char* m : {"a", "b", "a"}) {
    auto r = Post("/v1/chat/completions", Chat(m, "echo: from " + std::string(m)));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    json j = json::parse(r->body);
    EXPECT_EQ(j["model"], m);
    EXPECT_EQ(j["choices"][0]["message"]["content"], "from " + std::string(m));
  }
  auto msg = Post("/v1/messages", {{"model", "b"}, {"max_tokens", 16}, {"messages", {{{"role", "user"}, {"content", "echo: hey"}}}}});
  ASSERT_TRUE(msg);
  ASSERT_EQ(msg->status, 200) << msg->body;
  EXPECT_EQ(json::parse(msg->body)["model"], "b");
  auto text = Post("/v1/completions", {{"model", "c"}, {"prompt", "echo: raw"}});
  ASSERT_TRUE(text);
  ASSERT_EQ(text->status, 200) << text->body;
  EXPECT_EQ(json::parse(text->body)["model"], "c");
  auto resp = Post("/v1/responses", {{"model", "a"}, {"input", "echo: r"}, {"store", false}});
  ASSERT_TRUE(resp);
  ASSERT_EQ(resp->status, 200) << resp->body;
  EXPECT_EQ(json::parse(resp->body)["model"], "a");
  auto llama = Post("/completion", {{"model", "b"}, {"prompt", "echo: l"}, {"n_predict", 8}});
  ASSERT_TRUE(llama);
  ASSERT_EQ(llama->status, 200) << llama->body;
  EXPECT_EQ(json::parse(llama->body)["model"], "b");
  EXPECT_EQ(router_->stats().loads, 3u);  // each model loaded once, on its first request
}

TEST_F(MultiModelServer, AnUnknownModelIsA404NamingTheServedOnesInBothFlavours) {
  Start();
  auto r = Post("/v1/chat/completions", Chat("gpt-4o"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["param"], "model");
  const std::string message = e["message"];
  EXPECT_NE(message.find("'gpt-4o'"), std::string::npos) << message;
  EXPECT_NE(message.find("a, b, broken, c"), std::string::npos) << message;
  EXPECT_EQ(message.find(", d"), std::string::npos) << "d cannot run: " << message;

  auto a = Post("/v1/messages", {{"model", "claude-x"}, {"max_tokens", 4}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 404);
  json ae = json::parse(a->body);
  EXPECT_EQ(ae["type"], "error");
  EXPECT_EQ(ae["error"]["type"], "not_found_error");
  EXPECT_NE(ae["error"]["message"].get<std::string>().find("a, b, broken, c"), std::string::npos);
  EXPECT_EQ(router_->stats().loads, 0u);
}

TEST_F(MultiModelServer, NoModelNamedAndUnrunnableModelsAre400s) {
  Start();
  auto none = Post("/v1/chat/completions", Chat(""));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 400);
  EXPECT_EQ(json::parse(none->body)["error"]["param"], "model");
  auto d = Post("/v1/chat/completions", Chat("d"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 400);
  json e = json::parse(d->body)["error"];
  EXPECT_EQ(e["code"], "model_not_runnable");
  EXPECT_NE(e["message"].get<std::string>().find("mamba"), std::string::npos);
}

TEST_F(MultiModelServer, AFailedLoadIsA500NamingTheFileAndTheReason) {
  Start();
  auto r = Post("/v1/chat/completions", Chat("broken"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "model_load_failed");
  EXPECT_NE(e["message"].get<std::string>().find("bad magic 'GGUX'"), std::string::npos) << e.dump();
  json listed = ModelEntry(GetJson("/v1/models")["data"], "broken");
  EXPECT_EQ(listed["state"], "failed");
  EXPECT_NE(listed["error"].get<std::string>().find("bad magic"), std::string::npos);
}

TEST_F(MultiModelServer, ModelsListEveryKnownModelWithItsState) {
  Start();
  ASSERT_EQ(Post("/v1/chat/completions", Chat("b"))->status, 200);
  json list = GetJson("/v1/models");
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 5u);
  json b = ModelEntry(list["data"], "b");
  EXPECT_EQ(b["object"], "model");
  EXPECT_EQ(b["owned_by"], "ember");
  EXPECT_EQ(b["state"], "loaded");
  EXPECT_EQ(b["loaded"], true);
  EXPECT_EQ(b["runnable"], true);
  EXPECT_EQ(b["context_length"], 4096);
  json a = ModelEntry(list["data"], "a");
  EXPECT_EQ(a["state"], "unloaded");
  EXPECT_EQ(a["loaded"], false);
  json d = ModelEntry(list["data"], "d");
  EXPECT_EQ(d["runnable"], false);
  EXPECT_NE(d["error"].get<std::string>().find("mamba"), std::string::npos);
  EXPECT_EQ(GetJson("/models")["data"].size(), 5u);  // llama-server's list: the same models
  EXPECT_EQ(GetJson("/v1/models/b")["loaded"], true);
  json missing = GetJson("/v1/models/nope", 404);
  EXPECT_EQ(missing["error"]["code"], "model_not_found");
  EXPECT_EQ(router_->stats().loads, 1u);  // listing loads nothing
}

TEST_F(MultiModelServer, HealthStatsAndMetricsShowEveryLoadedModel) {
  Start();
  ASSERT_EQ(Post("/v1/chat/completions", Chat("a"))->status, 200);
  json health = GetJson("/health");
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["models_loaded"], json::array({"a"}));
  json stats = GetJson("/stats");
  ASSERT_TRUE(stats["models"].is_array());
  json a = ModelEntry(stats["models"], "a");
  EXPECT_EQ(a["state"], "loaded");
  EXPECT_EQ(a["engine"]["name"], "fake");
  EXPECT_EQ(a["queue"]["completed"], 1);
  EXPECT_EQ(a["lanes"].size(), 1u);
  EXPECT_EQ(a["loads"], 1);
  json b = ModelEntry(stats["models"], "b");
  EXPECT_EQ(b["state"], "unloaded");
  EXPECT_FALSE(b.contains("engine"));
  EXPECT_EQ(stats["router"]["loaded"], 1);
  EXPECT_EQ(stats["router"]["known"], 5);
  EXPECT_TRUE(stats.contains("uptime_s"));
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("ember_models_loaded 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("ember_model_loaded{model=\"a\"} 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("ember_model_loaded{model=\"b\"} 0\n"), std::string::npos);
  EXPECT_NE(m->body.find("ember_lane_busy{model=\"a\",lane=\"0\"} 0\n"), std::string::npos);
  EXPECT_NE(m->body.find("ember_engine_generations_total{model=\"a\"} 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("ember_model_loads_total 1\n"), std::string::npos);
  // The flush reaches every loaded model.
  auto f = client_->Post("/admin/cache/flush", "", "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 200);
}

TEST_F(MultiModelServer, LoadingBesideABusyModelIsA503WithRetryAfter) {
  ModelRouter::Options ro;
  ro.max_loaded = 1;
  Start(ro);
  Acquired held = router_->Acquire("a");  // as a request streaming from a would
  ASSERT_TRUE(held.ok());
  auto r = Post("/v1/chat/completions", Chat("b"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "model_busy");
  EXPECT_NE(e["message"].get<std::string>().find("--max-loaded 1"), std::string::npos) << e.dump();
  held.lease.Release();
  auto retry = Post("/v1/chat/completions", Chat("b"));
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->status, 200) << retry->body;
  EXPECT_EQ(ModelEntry(GetJson("/v1/models")["data"], "a")["state"], "unloaded");
}

TEST_F(MultiModelServer, AModelLargerThanTheMemoryBudgetIsA507NamingTheNumbers) {
  ModelRouter::Options ro;
  ro.memory_budget_bytes = 1 << 20;
  FakeModelLoader::Options f;
  f.weight_bytes = 2 << 20;
  f.kv_bytes = 1 << 20;
  Start(ro, f);
  auto r = Post("/v1/messages", {{"model", "a"}, {"max_tokens", 4}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 507);
  const std::string message = json::parse(r->body)["error"]["message"];
  EXPECT_NE(message.find("3.00 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("1.00 MiB"), std::string::npos) << message;
}

TEST_F(MultiModelServer, LlamaServerRoutesPickTheirModel) {
  Start();
  auto t = Post("/tokenize", {{"model", "c"}, {"content", "hi"}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  EXPECT_EQ(json::parse(t->body)["tokens"], json::array({'h', 'i'}));
  EXPECT_EQ(Post("/tokenize", {{"model", "zz"}, {"content", "hi"}})->status, 404);
  EXPECT_EQ(Post("/tokenize", {{"model", 7}, {"content", "hi"}})->status, 400);
  EXPECT_EQ(GetJson("/props?model=c")["model_alias"], "c");
  EXPECT_EQ(GetJson("/props", 400)["error"]["param"], "model");
  EXPECT_EQ(GetJson("/slots?model=c").size(), 1u);  // c is loaded: its one lane
  EXPECT_EQ(GetJson("/slots?model=a"), json::array());  // not loaded: no lanes (and not loaded by looking)
  EXPECT_EQ(ModelEntry(GetJson("/v1/models")["data"], "a")["state"], "unloaded");
  auto count = Post("/v1/messages/count_tokens", {{"model", "b"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_TRUE(count);
  EXPECT_EQ(count->status, 200) << count->body;
}

// The connection workers' default counts every model's lanes and queue: each loaded model admits its own
// running and queued generations, each holding a worker.
TEST(HttpWorkers, TheDefaultCountsEveryModelLoadedAtOnce) {
  ServeOptions o;
  o.max_queue = 10;
  o.parallel = 4;
  EXPECT_EQ(MaxAdmittedGenerations(o), 14u);
  EXPECT_EQ(HttpWorkerThreads(o), 14 + kSpareHttpWorkers);
  o.models_at_once = 3;
  EXPECT_EQ(MaxAdmittedGenerations(o), 42u);
  EXPECT_EQ(HttpWorkerThreads(o), 42 + kSpareHttpWorkers);
  o.http_threads = 7;  // an explicit count is kept as given
  EXPECT_EQ(HttpWorkerThreads(o), 7);
  o.http_threads = 0;
  o.models_at_once = 64;
  o.max_queue = 1000;
  EXPECT_EQ(HttpWorkerThreads(o), 4096);  // capped
}

}  // namespace
}  // namespace ember::server
