// Tenant isolation through the whole HTTP layer and the real prompt cache (the engine on a tiny generated
// model, RAM tier; the SSD tier across a restart is tests/e2e/tenancy.test.mjs and
// engine_backend_ssd_test.cc): requests under different API keys, or different cache_salt values, never
// share cached tokens, on both APIs; one key still reuses its own; and what reaches the backend names the
// tenant by a digest, never by key or salt.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cache/cache_namespace.h"
#include "server/engine_backend.h"
#include "server/fake_backend.h"
#include "server/http_server.h"
#include "support/test_support.h"
#include "tiny_model.h"

namespace ember::server {
namespace {

using nlohmann::json;

class TenancyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("m.gguf"));
  }
  static void TearDownTestSuite() { delete dir_; }

  // A fresh server (and so a fresh, empty cache) on the real engine; `fake` only where a test needs to
  // see the request the backend got.
  void Start(std::vector<std::string> keys, bool fake = false) {
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    o.api_keys = std::move(keys);
    o.model_path = dir_->file("m.gguf");
    o.prompt_cache_bytes = "64M";  // RAM only: ssd_cache_dir stays empty
    o.threads = 1;
    server_.reset();
    if (fake) {
      auto f = std::make_unique<FakeBackend>();
      fake_ = f.get();
      backend_ = std::move(f);
    } else {
      auto b = CreateEngineBackend(o);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      backend_ = std::move(*b);
    }
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  // Cached prompt tokens the reply reports (OpenAI cached_tokens / Anthropic cache_read_input_tokens).
  int Cached(const std::string& path, const std::string& content, const httplib::Headers& headers,
             const std::string& salt = "") {
    json body = {{"max_tokens", 4}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", content}}}}};
    if (!salt.empty()) body["cache_salt"] = salt;
    auto r = client_->Post(path.c_str(), headers, body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return -1;
    EXPECT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    return path == "/v1/messages" ? j["usage"]["cache_read_input_tokens"].get<int>()
                                  : j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  }

  static httplib::Headers Bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }
  static httplib::Headers XApiKey(const std::string& key) { return {{"x-api-key", key}}; }

  static testing::TempDir* dir_;
  std::unique_ptr<InferenceBackend> backend_;
  FakeBackend* fake_ = nullptr;  // backend_, when Start(keys, /*fake=*/true)
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};
testing::TempDir* TenancyTest::dir_ = nullptr;

const std::string kPrompt = "A long shared system prompt that a second tenant might try to guess, word by word. ";

// One fresh server per API, so every namespace starts empty (a tenant's own earlier requests would share
// the template's first tokens with its next one). A repeat of the whole prompt reuses all of it but the
// last token, which is recomputed for its logits: "> 20" of its ~30 tokens.
TEST_F(TenancyTest, TwoApiKeysNeverShareCachedPrefixesOnEitherApi) {
  for (const std::string path : {"/v1/chat/completions", "/v1/messages"}) {
    Start({"key-alpha", "key-bravo"});
    const std::string& p = kPrompt;
    EXPECT_EQ(Cached(path, p, Bearer("key-alpha")), 0) << path;
    EXPECT_EQ(Cached(path, p, Bearer("key-bravo")), 0) << path << ": B learns nothing about A's prefix";
    EXPECT_GT(Cached(path, p, Bearer("key-alpha")), 20) << path << ": A still reuses its own";
    EXPECT_GT(Cached(path, p, XApiKey("key-alpha")), 20) << path << ": the key is the tenant, not the header";
    EXPECT_GT(Cached(path, p, XApiKey("key-bravo")), 20) << path << ": and B its own";
    TearDown();
  }
}

TEST_F(TenancyTest, CacheSaltSeparatesTenantsUnderOneKeyAndWithoutKeysOnBothApis) {
  for (const std::string path : {"/v1/chat/completions", "/v1/messages"}) {
    Start({"key-alpha", "key-bravo"});
    const std::string& p = kPrompt;
    EXPECT_EQ(Cached(path, p, Bearer("key-alpha"), "user-1"), 0);
    EXPECT_EQ(Cached(path, p, Bearer("key-alpha"), "user-2"), 0) << path;
    EXPECT_EQ(Cached(path, p, Bearer("key-alpha")), 0) << path << ": no salt is a namespace of its own";
    EXPECT_EQ(Cached(path, p, Bearer("key-bravo"), "user-1"), 0) << path << ": one salt under two keys";
    EXPECT_GT(Cached(path, p, Bearer("key-alpha"), "user-1"), 20) << path;
    TearDown();
    Start({});
    EXPECT_EQ(Cached(path, p, {}, "user-1"), 0);
    EXPECT_EQ(Cached(path, p, {}, "user-2"), 0) << path;
    EXPECT_EQ(Cached(path, p, {}), 0) << path;
    EXPECT_GT(Cached(path, p, {}), 20) << path << ": key-less, unsalted traffic still shares one namespace";
    TearDown();
  }
}

TEST_F(TenancyTest, TheBackendSeesADigestNeverTheKeyOrTheSalt) {
  Start({"key-alpha"}, /*fake=*/true);
  Cached("/v1/chat/completions", "hi", Bearer("key-alpha"), "salt-xyz");
  const std::string tenant = fake_->last_request().cache_salt;
  EXPECT_EQ(tenant.size(), 64u) << tenant;  // SHA-256, hex
  EXPECT_EQ(tenant.find("key-alpha"), std::string::npos);
  EXPECT_EQ(tenant.find("salt-xyz"), std::string::npos);
  EXPECT_NE(tenant, CacheNamespace::TenantOf("", "salt-xyz"));  // the key is part of it
  Cached("/v1/messages", "hi", XApiKey("key-alpha"), "salt-xyz");
  EXPECT_EQ(fake_->last_request().cache_salt, tenant);  // the same tenant through either API and header
}

}  // namespace
}  // namespace ember::server
