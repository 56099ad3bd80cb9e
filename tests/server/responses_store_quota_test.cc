// The response store's per-tenant shares: with N API keys each tenant may hold cap / N bytes, a Put
// evicts only the storing tenant's own entries, and entries of tenants nobody can authenticate as any
// more (a key removed since) go first when the whole store is over its cap.
#include <gtest/gtest.h>

#include <string>

#include "server/response_store.h"
#include "server/responses_response.h"
#include "support/mem_env.h"

namespace ember::server {
namespace {

StoredResponse Make(const std::string& tenant, size_t pad = 0) {
  StoredResponse r;
  r.id = RandomId("resp_");
  r.tenant = tenant;
  r.response = {{"id", r.id}, {"object", "response"}, {"pad", std::string(pad, 'x')}};
  r.conversation = {ChatMessage{"user", "hi", {}, "", ""}, ChatMessage{"assistant", "hello", {}, "", ""}};
  return r;
}

ResponseStoreOptions Opts(Env* env, size_t max_bytes, std::vector<std::string> tenants, std::string root = "") {
  ResponseStoreOptions o;
  o.env = env;
  o.root = std::move(root);
  o.max_bytes = max_bytes;
  o.ttl_s = 0;
  o.tenants = std::move(tenants);
  return o;
}

// Bytes one Make(tenant, 1000) costs once stored (Put stamps the time, whose digits count).
size_t StoredSize(const std::string& tenant) {
  MemEnv env;
  ResponseStore s(Opts(&env, 1 << 20, {}));
  EXPECT_TRUE(s.Put(Make(tenant, 1000)).ok());
  return s.tenant_bytes(tenant);
}

TEST(ResponseStoreQuota, ATenantFillingItsShareEvictsOnlyItsOwn) {
  MemEnv env;
  const size_t one = StoredSize("a");
  ASSERT_EQ(StoredSize("b"), one);
  ResponseStore store(Opts(&env, 20 * one, {"a", "b"}));
  EXPECT_EQ(store.tenant_quota(), 10 * one);
  std::vector<StoredResponse> a_entries;
  for (int i = 0; i < 3; ++i) {
    a_entries.push_back(Make("a", 1000));
    ASSERT_TRUE(store.Put(a_entries.back()).ok());
  }
  // B stores ten times its share, the attack of issue 29: A keeps every response.
  std::vector<StoredResponse> b_entries;
  for (int i = 0; i < 100; ++i) {
    b_entries.push_back(Make("b", 1000));
    ASSERT_TRUE(store.Put(b_entries.back()).ok());
  }
  for (const StoredResponse& r : a_entries) EXPECT_TRUE(store.Get(r.id, "a").has_value()) << r.id;
  EXPECT_LE(store.tenant_bytes("b"), store.tenant_quota());
  EXPECT_EQ(store.tenant_bytes("a"), 3 * one);
  // B lost its own oldest, kept its newest.
  EXPECT_FALSE(store.Get(b_entries.front().id, "b").has_value());
  EXPECT_TRUE(store.Get(b_entries.back().id, "b").has_value());
  EXPECT_EQ(store.stats().evicted, 90u);
}

TEST(ResponseStoreQuota, AnEntryOverOneShareIsRefusedNamingTheShare) {
  MemEnv env;
  const size_t one = StoredSize("a");
  ResponseStore store(Opts(&env, 3 * one, {"a", "b"}));  // a share: 1.5 entries
  StoredResponse big = Make("a", 2 * one);
  Status st = store.Put(big);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("one API key's share"), std::string::npos) << st.message();
  EXPECT_FALSE(store.Get(big.id, "a").has_value());
  // Without a tenant list, the whole cap is one tenant's.
  ResponseStore single(Opts(&env, 3 * one, {}));
  EXPECT_EQ(single.tenant_quota(), 3 * one);
  EXPECT_TRUE(single.Put(Make("a", 1000)).ok());
}

TEST(ResponseStoreQuota, EntriesNobodyCanReadGoFirstWhenTheStoreIsFull) {
  MemEnv env;
  const size_t one = StoredSize("a");
  const size_t gone = StoredSize("gone");
  std::vector<StoredResponse> old;
  {
    // A first run with keys "a" and "gone".
    ResponseStore first(Opts(&env, 20 * one, {"a", "gone"}, "/cache"));
    for (int i = 0; i < 8; ++i) {
      old.push_back(Make("gone", 1000));
      ASSERT_TRUE(first.Put(old.back()).ok());
    }
  }
  // The restart has keys "a" and "b"; "gone"'s entries are still counted, and nobody can read them.
  ResponseStore store(Opts(&env, 20 * one, {"a", "b"}, "/cache"));
  ASSERT_EQ(store.stats().loaded, 8u);
  std::vector<StoredResponse> mine;
  for (int i = 0; i < 10; ++i) {
    mine.push_back(Make(i % 2 == 0 ? "a" : "b", 1000));
    ASSERT_TRUE(store.Put(mine.back()).ok());
  }
  for (int i = 0; i < 10; ++i) {
    const StoredResponse& r = mine[static_cast<size_t>(i)];
    EXPECT_TRUE(store.Get(r.id, r.tenant).has_value()) << i;
  }
  EXPECT_EQ(store.tenant_bytes("gone"), 8 * gone);  // 8 + 10 entries in a cap of 20: none went yet
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store.Put(Make(i % 2 == 0 ? "a" : "b", 1000)).ok());
  EXPECT_EQ(store.tenant_bytes("gone"), 0u);
  EXPECT_EQ(store.tenant_bytes("a"), 10 * one);
  EXPECT_EQ(store.tenant_bytes("b"), 10 * one);
}

}  // namespace
}  // namespace ember::server
