#include "server/access_control.h"

#include <gtest/gtest.h>

namespace ember::server {
namespace {

TEST(AccessControl, NoKeysMeansOpen) {
  AccessControl a({}, {});
  EXPECT_FALSE(a.auth_required());
  EXPECT_TRUE(a.Authorized("", ""));
}

TEST(AccessControl, BearerAndXApiKey) {
  AccessControl a({"sekrit", "other"}, {});
  EXPECT_TRUE(a.Authorized("Bearer sekrit", ""));
  EXPECT_TRUE(a.Authorized("", "other"));
  EXPECT_FALSE(a.Authorized("Bearer wrong", ""));
  EXPECT_FALSE(a.Authorized("sekrit", ""));        // missing "Bearer "
  EXPECT_FALSE(a.Authorized("Bearer ", ""));
  EXPECT_FALSE(a.Authorized("", ""));
  EXPECT_FALSE(a.Authorized("Bearer sekri", ""));  // prefix of a key
}

TEST(AccessControl, KeyIdentityNamesWhichKeyMatchedNeverTheKeyItself) {
  AccessControl a({"key-alpha", "key-bravo"}, {});
  const std::string alpha = a.KeyIdentity("Bearer key-alpha", "");
  const std::string bravo = a.KeyIdentity("", "key-bravo");
  EXPECT_EQ(alpha.size(), 64u);  // SHA-256 hex
  EXPECT_EQ(alpha.find("key-alpha"), std::string::npos);
  EXPECT_NE(alpha, bravo);
  EXPECT_EQ(a.KeyIdentity("", "key-alpha"), alpha);  // either header, one identity
  EXPECT_EQ(a.KeyIdentity("Bearer key-alpha", "key-bravo"), alpha);  // Bearer wins, as in Authorized
  EXPECT_EQ(a.KeyIdentity("Bearer wrong", "key-bravo"), bravo);      // ... when it matches at all
  EXPECT_EQ(a.KeyIdentity("Bearer wrong", ""), "");
  // Stable across restarts and independent of the order keys are configured in (SSD entries persist).
  EXPECT_EQ(AccessControl({"key-bravo", "key-alpha"}, {}).KeyIdentity("Bearer key-alpha", ""), alpha);
  EXPECT_EQ(AccessControl({}, {}).KeyIdentity("Bearer key-alpha", ""), "");  // no keys: anonymous
}

TEST(AccessControl, EmptyConfiguredKeyIsIgnored) {
  AccessControl a({""}, {});
  EXPECT_FALSE(a.auth_required());
}

TEST(AccessControl, LocalhostOrigins) {
  EXPECT_TRUE(IsLocalhostOrigin("http://localhost"));
  EXPECT_TRUE(IsLocalhostOrigin("http://localhost:3000"));
  EXPECT_TRUE(IsLocalhostOrigin("https://127.0.0.1:8443"));
  EXPECT_TRUE(IsLocalhostOrigin("http://[::1]:80"));
  EXPECT_FALSE(IsLocalhostOrigin("http://localhost.evil.com"));
  EXPECT_FALSE(IsLocalhostOrigin("http://127.0.0.1.evil.com"));
  EXPECT_FALSE(IsLocalhostOrigin("http://localhost:80x"));
  EXPECT_FALSE(IsLocalhostOrigin("null"));
}

TEST(AccessControl, ConfiguredOrigins) {
  AccessControl a({}, {"https://app.example.com"});
  EXPECT_TRUE(a.OriginAllowed("https://app.example.com"));
  EXPECT_TRUE(a.OriginAllowed("http://localhost:5173"));
  EXPECT_FALSE(a.OriginAllowed("https://evil.example.com"));
  EXPECT_FALSE(a.OriginAllowed(""));
  AccessControl any({}, {"*"});
  EXPECT_TRUE(any.OriginAllowed("https://anything.example"));
}

TEST(HostAllowlist, LoopbackNamesAndConfiguredHostsOnly) {
  const HostAllowlist hosts(/*enforce=*/true, {"My.Box", "api.example:8443"});
  for (const char* ok : {"localhost", "LOCALHOST:8080", "app.localhost", "127.0.0.1", "127.4.5.6:1", "[::1]",
                         "[::1]:8080", "my.box", "MY.BOX:443", "api.example", "api.example:1", ""}) {
    EXPECT_TRUE(hosts.Allowed(ok)) << ok;
  }
  for (const char* bad : {"attacker.example", "attacker.example:8080", "localhost.attacker.example",
                          "127.0.0.1.attacker.example", "10.0.0.1", "128.0.0.1", "127.0.0.256", "127.0.0",
                          "127.0.0.1.1", "localhost:80x", "localhost:", "[::2]", "[::1", "my.box.evil", ":8080"}) {
    EXPECT_FALSE(hosts.Allowed(bad)) << bad;
  }
  EXPECT_TRUE(HostAllowlist(true, {"*"}).Allowed("anything.example:1"));
  EXPECT_TRUE(HostAllowlist(false, {}).Allowed("attacker.example"));  // not bound to loopback
}

TEST(HostAllowlist, LoopbackBindAddresses) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LocalHost"}) {
    EXPECT_TRUE(IsLoopbackBindAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0", "::", "192.168.1.5", "example.com", ""}) EXPECT_FALSE(IsLoopbackBindAddress(a)) << a;
  EXPECT_TRUE(IsLoopbackAuthority("127.0.0.1:8080"));
  EXPECT_FALSE(IsLoopbackAuthority("127.0.0.1:80:80"));
}

TEST(JsonMediaType, ParametersAndCaseButNothingElse) {
  for (const char* ok : {"application/json", "application/json; charset=utf-8", "Application/JSON ;charset=UTF-8",
                         " application/json "}) {
    EXPECT_TRUE(IsJsonMediaType(ok)) << ok;
  }
  for (const char* bad : {"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                          "multipart/form-data; boundary=x", "application/json-seq", "application/jsonp",
                          "text/json", "application/x-json"}) {
    EXPECT_FALSE(IsJsonMediaType(bad)) << bad;
  }
}

}  // namespace
}  // namespace ember::server
