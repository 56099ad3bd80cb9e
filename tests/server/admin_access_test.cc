// Who may read /stats and /metrics and call /admin/*: they show every API key's counters, so with API
// keys they answer only the admin key (--admin-key), or the one key of a one-key server; /health stays
// open. Through real HTTP on the FakeBackend.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/access_control.h"
#include "server/fake_backend.h"
#include "server/http_server.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr const char* kA = "key-a";
constexpr const char* kB = "key-b";
constexpr const char* kAdmin = "key-admin";

class AdminAccessTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> keys, std::string admin_key) {
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    o.api_keys = std::move(keys);
    o.admin_key = std::move(admin_key);
    client_.reset();
    server_.reset();  // before the backend it serves
    backend_ = std::make_unique<FakeBackend>(FakeBackend::Options{});
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }
  // Status of GET `path` (or POST for /admin/*) with `key` as a Bearer token ("" = none).
  int Status(const std::string& path, const std::string& key, std::string* body = nullptr) {
    httplib::Headers h;
    if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
    httplib::Result r = path.starts_with("/admin/") ? client_->Post(path, h, "{}", "application/json")
                                                    : client_->Get(path, h);
    if (!r) return -1;
    if (body != nullptr) *body = r->body;
    return r->status;
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(AdminAccessTest, WithAnAdminKeyOnlyItReadsTheAdminRoutes) {
  Start({kA, kB}, kAdmin);
  for (const char* path : {"/stats", "/metrics", "/admin/cache/flush"}) {
    std::string body;
    EXPECT_EQ(Status(path, kAdmin), 200) << path;
    EXPECT_EQ(Status(path, kB, &body), 403) << path;
    EXPECT_NE(body.find("--admin-key"), std::string::npos) << body;
    EXPECT_EQ(json::parse(body)["error"]["type"], "permission_error") << body;
    EXPECT_EQ(Status(path, ""), 401) << path;
    EXPECT_EQ(Status(path, "wrong"), 401) << path;
  }
  EXPECT_EQ(Status("/health", ""), 200);
  // The admin key is not an API key: it is nobody's tenant.
  EXPECT_EQ(Status("/v1/models", kAdmin), 401);
  EXPECT_EQ(Status("/v1/models", kA), 200);
}

TEST_F(AdminAccessTest, SeveralKeysAndNoAdminKeyRefuseEveryone) {
  Start({kA, kB}, "");
  for (const char* path : {"/stats", "/metrics", "/admin/cache/flush"}) {
    std::string body;
    EXPECT_EQ(Status(path, kA, &body), 403) << path;
    EXPECT_NE(body.find("start it with --admin-key"), std::string::npos) << body;
    EXPECT_EQ(Status(path, kB), 403) << path;
    EXPECT_EQ(Status(path, ""), 401) << path;
  }
  EXPECT_EQ(Status("/health", ""), 200);
}

TEST_F(AdminAccessTest, OneKeyIsItsOwnAdminAndNoKeysMeansOpen) {
  Start({kA}, "");
  EXPECT_EQ(Status("/stats", kA), 200);
  EXPECT_EQ(Status("/stats", ""), 401);
  Start({}, "");
  EXPECT_EQ(Status("/stats", ""), 200);
  EXPECT_EQ(Status("/metrics", ""), 200);
}

TEST_F(AdminAccessTest, AnAdminKeyAloneGuardsOnlyTheAdminRoutes) {
  Start({}, kAdmin);
  EXPECT_EQ(Status("/stats", ""), 401);
  EXPECT_EQ(Status("/stats", kAdmin), 200);
  EXPECT_EQ(Status("/v1/models", ""), 200);
}

TEST(AdminAccess, DecisionTable) {
  using A = AdminAccess;
  const AccessControl two({kA, kB}, {}, kAdmin);
  EXPECT_EQ(two.Admin("Bearer key-admin", ""), A::kAllowed);
  EXPECT_EQ(two.Admin("", "key-admin"), A::kAllowed);
  EXPECT_EQ(two.Admin("Bearer key-a", ""), A::kNotAdmin);
  EXPECT_EQ(two.Admin("Bearer key-adminX", ""), A::kNoCredentials);
  EXPECT_EQ(two.Admin("", ""), A::kNoCredentials);
  EXPECT_FALSE(two.Authorized("Bearer key-admin", ""));
  const AccessControl no_admin({kA, kB}, {});
  EXPECT_EQ(no_admin.Admin("Bearer key-a", ""), A::kNoAdminKey);
  EXPECT_EQ(no_admin.Admin("", ""), A::kNoCredentials);
  EXPECT_EQ(AccessControl({kA}, {}).Admin("", "key-a"), A::kAllowed);
  EXPECT_EQ(AccessControl({}, {}).Admin("", ""), A::kAllowed);
  EXPECT_EQ(AccessControl({}, {}, kAdmin).Admin("", ""), A::kNoCredentials);
}

}  // namespace
}  // namespace ember::server
