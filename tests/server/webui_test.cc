// The embedded browser UI (webui_routes.cc): every file of src/server/webui/ is served byte for byte at
// its path with its content type and the security headers, without a key (the API behind it still
// wants one), revalidates with its ETag, and obeys the Host rule like every route. The pages are also
// checked to need nothing the CSP forbids: no inline script or style, nothing from another origin.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/fake_backend.h"
#include "server/http_server.h"
#include "server/webui_assets.h"

namespace ember::server {
namespace {

constexpr const char* kKey = "webui-test-key";

std::string PathOf(std::string_view name) {
  if (name == "index.html") return "/";
  if (name.ends_with(".html")) return "/" + std::string(name.substr(0, name.size() - 5));
  return "/ui/" + std::string(name);
}

std::string SourceFile(std::string_view name) {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/src/server/webui/" + std::string(name), std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class WebUiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.shutdown_timeout_s = 1;
    o.api_keys = {kKey};
    backend_ = std::make_unique<FakeBackend>(FakeBackend::Options{});
    server_ = std::make_unique<HttpServer>(o, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(WebUiTest, EveryFileIsEmbeddedAndServedAsIs) {
  std::set<std::string> names;
  for (const WebAsset& a : WebAssets()) names.insert(std::string(a.name));
  for (const char* expected : {"index.html", "dashboard.html", "chat.js", "dashboard.js", "common.js", "style.css"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
  for (const WebAsset& a : WebAssets()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_EQ(a.body, SourceFile(a.name)) << "the embedded bytes differ from the source file";
    auto r = client_->Get(PathOf(a.name));  // no key
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, a.body);
    EXPECT_EQ(r->get_header_value("Content-Type"), a.content_type);
    EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
    EXPECT_EQ(r->get_header_value("ETag"), a.etag);
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r->get_header_value("X-Frame-Options"), "DENY");
    const std::string csp = r->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
  }
  EXPECT_EQ(client_->Get("/")->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(client_->Get("/ui/chat.js")->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(client_->Get("/ui/style.css")->get_header_value("Content-Type"), "text/css; charset=utf-8");
}

TEST_F(WebUiTest, PagesNeedNoKeyButTheApiDoes) {
  EXPECT_EQ(client_->Get("/")->status, 200);
  EXPECT_EQ(client_->Get("/dashboard")->status, 200);
  EXPECT_EQ(client_->Get("/stats")->status, 401);
  EXPECT_EQ(client_->Get("/v1/models")->status, 401);
  EXPECT_EQ(client_->Get("/stats", {{"Authorization", std::string("Bearer ") + kKey}})->status, 200);
  EXPECT_EQ(client_->Get("/ui/nothing.js")->status, 404);
  EXPECT_EQ(client_->Get("/index.html")->status, 404);  // a page has one path
}

TEST_F(WebUiTest, RevalidatesWithTheETag) {
  auto first = client_->Get("/");
  ASSERT_TRUE(first);
  const std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = client_->Get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(client_->Get("/", {{"If-None-Match", "\"stale\""}})->status, 200);
}

TEST_F(WebUiTest, HeadAndOtherMethods) {
  auto head = client_->Head("/dashboard");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  auto post = client_->Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
}

// DNS rebinding: a page at attacker.example resolving to 127.0.0.1 must not get the UI (and through it,
// whatever key the user types) any more than the API.
TEST_F(WebUiTest, ForeignHostGetsTheSame403AsTheApi) {
  for (const char* path : {"/", "/dashboard", "/ui/chat.js", "/health"}) {
    SCOPED_TRACE(path);
    auto r = client_->Get(path, {{"Host", "attacker.example"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    EXPECT_NE(r->body.find("DNS rebinding"), std::string::npos) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  }
  EXPECT_EQ(client_->Get("/", {{"Host", "localhost:8080"}})->status, 200);
}

// What the CSP would block must not be in the pages: inline scripts, inline styles, event-handler
// attributes, or anything from another origin. Every local reference resolves to a served file.
TEST(WebUiPages, NeedNothingTheCspForbids) {
  const std::regex ref(R"re((?:src|href)="([^"]*)")re");
  for (const WebAsset& a : WebAssets()) {
    if (!a.name.ends_with(".html")) continue;
    SCOPED_TRACE(std::string(a.name));
    const std::string html(a.body);
    EXPECT_EQ(html.find("<style"), std::string::npos);
    EXPECT_EQ(html.find(" style="), std::string::npos);
    EXPECT_FALSE(std::regex_search(html, std::regex(R"( on[a-z]+=)")));
    EXPECT_FALSE(std::regex_search(html, std::regex(R"(<script(?![^>]*\ssrc=)[^>]*>)"))) << "inline script";
    int refs = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), ref); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      ++refs;
      ASSERT_TRUE(target.starts_with("/")) << target << " is not same-origin";
      bool served = false;
      for (const WebAsset& b : WebAssets()) served = served || PathOf(b.name) == target;
      EXPECT_TRUE(served) << target;
    }
    EXPECT_GE(refs, 4);  // icon, style, script, the other page
  }
}

}  // namespace
}  // namespace ember::server
