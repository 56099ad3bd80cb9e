// CacheNamespace: the injective key, and the tenant digest of (API key identity, cache_salt) that keeps
// tenants apart and keeps both out of the cache's files.
#include "cache/cache_namespace.h"

#include <gtest/gtest.h>

#include <set>

namespace ember {
namespace {

TEST(CacheNamespaceTest, NoKeyAndNoSaltIsTheSharedDefaultTenant) {
  EXPECT_EQ(CacheNamespace::TenantOf("", ""), "");
  CacheNamespace ns;
  ns.tenant = CacheNamespace::TenantOf("", "");
  EXPECT_EQ(ns.Key(), CacheNamespace{}.Key());
}

TEST(CacheNamespaceTest, EveryKeyAndSaltCombinationIsItsOwnTenant) {
  const std::string a = "id-of-key-a", b = "id-of-key-b";
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {a, ""}, {b, ""}, {"", "s1"}, {"", "s2"}, {a, "s1"}, {b, "s1"}, {a, "s2"},
      {"ab", "c"}, {"a", "bc"},  // field boundaries count: length-prefixed
      {"s1", ""},                // a salt is not a key identity that happens to be equal
  };
  std::set<std::string> tenants;
  for (const auto& [key, salt] : inputs) {
    const std::string t = CacheNamespace::TenantOf(key, salt);
    EXPECT_EQ(t, CacheNamespace::TenantOf(key, salt)) << "deterministic (SSD entries survive restarts)";
    EXPECT_EQ(t.size(), 64u);
    tenants.insert(t);
    CacheNamespace ns;
    ns.tenant = t;
    EXPECT_NE(ns.Key(), CacheNamespace{}.Key());
  }
  EXPECT_EQ(tenants.size(), inputs.size());
}

TEST(CacheNamespaceTest, TheKeyHoldsNeitherTheKeyIdentityNorTheSaltInClear) {
  CacheNamespace ns;
  ns.adapters = {{"lora-x", 42, 0.5f}};
  ns.tenant = CacheNamespace::TenantOf("identity-of-key-alpha", "my-secret-salt");
  const std::string key = ns.Key();  // what the SSD tier writes into each entry file
  EXPECT_EQ(key.find("identity-of-key-alpha"), std::string::npos);
  EXPECT_EQ(key.find("my-secret-salt"), std::string::npos);
  EXPECT_NE(key.find(ns.tenant), std::string::npos);
  EXPECT_NE(key.find("lora-x"), std::string::npos);
}

}  // namespace
}  // namespace ember
