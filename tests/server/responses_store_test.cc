// The response store: tenancy, the byte cap (LRU), the TTL on a simulated clock, persistence across a
// "restart" (a second store on the same MemEnv), power loss, and damaged or hostile files.
#include "server/response_store.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "server/responses_response.h"
#include "util/sha256.h"
#include "support/fault_injection_env.h"
#include "support/mem_env.h"
#include "support/sim_env.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr const char* kRoot = "/cache";
constexpr const char* kDir = "/cache/responses";

std::string Sha256ForTest(const std::string& s) { return Sha256Hex(s); }

StoredResponse Make(const std::string& tenant = "", const std::string& text = "hello") {
  StoredResponse r;
  r.id = RandomId("resp_");
  r.tenant = tenant;
  r.response = {{"id", r.id}, {"object", "response"}, {"output_text_for_test", text}};
  r.conversation = {ChatMessage{"user", "hi " + text, {}, "", ""},
                    ChatMessage{"assistant", "", {ToolCall{"call_1", "get", "{\"a\":1}"}}, "", ""},
                    ChatMessage{"tool", "42", {}, "call_1", "get"},
                    ChatMessage{"assistant", text, {}, "", ""}};
  return r;
}

ResponseStoreOptions Opts(Env* env, size_t max_bytes = 1 << 20, double ttl_s = 0, std::string root = kRoot) {
  ResponseStoreOptions o;
  o.env = env;
  o.root = std::move(root);
  o.max_bytes = max_bytes;
  o.ttl_s = ttl_s;
  return o;
}

std::string PathOf(const StoredResponse& r) { return std::string(kDir) + "/" + r.id + ".json"; }

TEST(ResponseStore, GetReturnsWhatWasPutOnlyToItsTenant) {
  MemEnv env;
  ResponseStore store(Opts(&env));
  StoredResponse r = Make("tenant-a");
  ASSERT_TRUE(store.Put(r).ok());
  std::optional<StoredResponse> got = store.Get(r.id, "tenant-a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->response, r.response);
  ASSERT_EQ(got->conversation.size(), 4u);
  EXPECT_EQ(got->conversation[1].tool_calls[0].arguments_json, "{\"a\":1}");
  EXPECT_EQ(got->conversation[2].tool_call_id, "call_1");
  EXPECT_EQ(got->conversation[2].name, "get");
  // Another tenant (another API key, or none) cannot see it, nor delete it.
  EXPECT_FALSE(store.Get(r.id, "tenant-b").has_value());
  EXPECT_FALSE(store.Get(r.id, "").has_value());
  EXPECT_FALSE(store.Delete(r.id, "tenant-b"));
  EXPECT_TRUE(store.Get(r.id, "tenant-a").has_value());
  EXPECT_TRUE(store.Delete(r.id, "tenant-a"));
  EXPECT_FALSE(store.Get(r.id, "tenant-a").has_value());
  EXPECT_FALSE(env.FileExists(PathOf(r)));
  EXPECT_FALSE(store.Delete(r.id, "tenant-a"));
}

TEST(ResponseStore, CapEvictsLeastRecentlyUsed) {
  MemEnv env;
  const size_t one = EncodeStoredResponse(Make()).size();
  ResponseStore store(Opts(&env, 3 * one + one / 2));
  StoredResponse a = Make(), b = Make(), c = Make(), d = Make();
  ASSERT_TRUE(store.Put(a).ok());
  ASSERT_TRUE(store.Put(b).ok());
  ASSERT_TRUE(store.Put(c).ok());
  ASSERT_TRUE(store.Get(a.id, "").has_value());  // a is now the most recently used
  ASSERT_TRUE(store.Put(d).ok());
  EXPECT_TRUE(store.Get(a.id, "").has_value());
  EXPECT_FALSE(store.Get(b.id, "").has_value());  // the least recently used went
  EXPECT_FALSE(env.FileExists(PathOf(b)));        // with its file
  EXPECT_TRUE(store.Get(c.id, "").has_value());
  EXPECT_TRUE(store.Get(d.id, "").has_value());
  const ResponseStoreStats s = store.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_LE(s.bytes, 3 * one + one / 2);
  EXPECT_EQ(s.evicted, 1u);
}

TEST(ResponseStore, EntryOverTheCapIsRefusedAndZeroStoresNothing) {
  MemEnv env;
  ResponseStore small(Opts(&env, 100));
  StoredResponse r = Make();
  EXPECT_EQ(small.Put(r).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(small.Get(r.id, "").has_value());
  ResponseStore off(Opts(&env, 0));
  EXPECT_FALSE(off.Put(r).ok());
  EXPECT_EQ(off.stats().entries, 0u);
  EXPECT_FALSE(env.FileExists(PathOf(r)));
}

TEST(ResponseStore, TtlOnTheWallClock) {
  MemEnv mem;
  ember::testing::SimEnv env(&mem);
  auto store = std::make_unique<ResponseStore>(Opts(&env, 1 << 20, /*ttl_s=*/60));
  StoredResponse old = Make();
  ASSERT_TRUE(store->Put(old).ok());
  env.AdvanceSeconds(30);
  StoredResponse young = Make();
  ASSERT_TRUE(store->Put(young).ok());
  env.AdvanceSeconds(29);
  EXPECT_TRUE(store->Get(old.id, "").has_value());  // 59 s old
  env.AdvanceSeconds(2);
  EXPECT_FALSE(store->Get(old.id, "").has_value());  // 61 s old: expired (a Get does not renew it)
  EXPECT_FALSE(mem.FileExists(PathOf(old)));
  EXPECT_TRUE(store->Get(young.id, "").has_value());
  // Expiry holds across a restart: the store time is in the file, not counted from the load.
  store.reset();
  env.AdvanceSeconds(30);  // young is now 61 s old
  store = std::make_unique<ResponseStore>(Opts(&env, 1 << 20, 60));
  EXPECT_FALSE(store->Get(young.id, "").has_value());
  EXPECT_EQ(store->stats().loaded, 0u);
  EXPECT_EQ(store->stats().expired, 1u);
  EXPECT_FALSE(mem.FileExists(PathOf(young)));
}

TEST(ResponseStore, SurvivesARestartAndPowerLoss) {
  MemEnv env;
  StoredResponse a = Make("t", "first"), b = Make("t", "second");
  {
    ResponseStore store(Opts(&env));
    ASSERT_TRUE(store.Put(a).ok());
    ASSERT_TRUE(store.Put(b).ok());
    EXPECT_TRUE(store.stats().persistent);
    EXPECT_TRUE(store.Delete(a.id, "t"));
  }
  env.PowerLoss();  // only what was synced (file and directory) survives
  ResponseStore store(Opts(&env));
  EXPECT_EQ(store.stats().loaded, 1u);
  EXPECT_FALSE(store.Get(a.id, "t").has_value());  // deleted stays deleted
  std::optional<StoredResponse> got = store.Get(b.id, "t");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->response, b.response);
  EXPECT_EQ(got->conversation.back().content, "second");
  EXPECT_FALSE(store.Get(b.id, "other").has_value());  // the tenant is in the file too
}

TEST(ResponseStore, RestartKeepsTheLeastRecentlyStoredFirstInLine) {
  MemEnv env;
  const size_t one = EncodeStoredResponse(Make()).size();
  StoredResponse a = Make(), b = Make();
  {
    ResponseStore store(Opts(&env, 4 * one));
    ASSERT_TRUE(store.Put(a).ok());
    env.AdvanceMicros(1000);
    ASSERT_TRUE(store.Put(b).ok());
  }
  // A smaller cap at the next start evicts the older one.
  ResponseStore store(Opts(&env, one + one / 2));
  EXPECT_FALSE(store.Get(a.id, "").has_value());
  EXPECT_TRUE(store.Get(b.id, "").has_value());
}

TEST(ResponseStore, WithoutARootItIsRamOnly) {
  MemEnv env;
  ResponseStore store(Opts(&env, 1 << 20, 0, /*root=*/""));
  StoredResponse r = Make();
  ASSERT_TRUE(store.Put(r).ok());
  EXPECT_TRUE(store.Get(r.id, "").has_value());
  EXPECT_FALSE(store.stats().persistent);
  EXPECT_TRUE(env.AllFiles().empty());
}

TEST(ResponseStore, TheDirectoryIsMadeOnlyWhenSomethingIsStored) {
  MemEnv env;
  {
    ResponseStore store(Opts(&env));
    EXPECT_FALSE(env.DirExists(kDir));  // a server that stores nothing leaves the cache dir alone
  }
  ResponseStore store(Opts(&env));
  ASSERT_TRUE(store.Put(Make()).ok());
  EXPECT_TRUE(env.DirExists(kDir));
  StatusOr<PathInfo> info = env.Stat(kDir, false);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->mode, 0700u);
}

TEST(ResponseStore, ASecondServerOnTheDirectoryKeepsItsOwnInRam) {
  MemEnv env;
  ResponseStore first(Opts(&env));
  ASSERT_TRUE(first.Put(Make()).ok());
  ResponseStore second(Opts(&env));  // the lock is held: it neither reads nor writes the files
  StoredResponse r = Make();
  EXPECT_TRUE(second.Put(r).ok());
  EXPECT_FALSE(second.stats().persistent);
  EXPECT_EQ(second.stats().loaded, 0u);
  EXPECT_FALSE(env.FileExists(PathOf(r)));
  EXPECT_TRUE(second.Get(r.id, "").has_value());
}

TEST(ResponseStore, AnUnsafeRootIsNotUsed) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirs(kRoot).ok());
  env.set_dir_attrs(kRoot, MemEnv::kUid, 0777);  // writable by others: entries could be planted
  ResponseStore store(Opts(&env));
  StoredResponse r = Make();
  EXPECT_TRUE(store.Put(r).ok());
  EXPECT_FALSE(store.stats().persistent);
  EXPECT_FALSE(env.DirExists(kDir));
  EXPECT_TRUE(store.Get(r.id, "").has_value());
}

TEST(ResponseStore, DamagedAndHostileFilesAreSkippedNeverTrusted) {
  MemEnv env;
  StoredResponse good = Make(), flipped = Make(), cut = Make(), relabeled = Make();
  {
    ResponseStore store(Opts(&env));
    for (const StoredResponse* r : {&good, &flipped, &cut, &relabeled}) ASSERT_TRUE(store.Put(*r).ok());
  }
  const uint64_t size = *env.FileSize(PathOf(flipped));
  ASSERT_TRUE(env.FlipByte(PathOf(flipped), size - 10).ok());
  ASSERT_TRUE(env.Truncate(PathOf(cut), size / 2).ok());
  // A valid file under another response's name (a copy planted to reach a response id it is not).
  std::vector<uint8_t> moved = *env.ReadFile(PathOf(good));
  ASSERT_TRUE(env.RemoveFile(PathOf(relabeled)).ok());
  env.PutDurableFile(PathOf(relabeled), moved);
  auto put = [&](const std::string& name, const std::string& text) {
    env.PutDurableFile(std::string(kDir) + "/" + name, std::vector<uint8_t>(text.begin(), text.end()));
  };
  // Hostile bodies with a correct checksum: deep JSON, wrong types, a conversation that is not one.
  auto forged = [&](const std::string& id, const std::string& body) {
    put(id + ".json", "ember-response 1 " + Sha256ForTest(body) + "\n" + body);
  };
  const std::string deep_id = RandomId("resp_"), type_id = RandomId("resp_"), conv_id = RandomId("resp_");
  forged(deep_id, std::string(100000, '[') + std::string(100000, ']'));
  forged(type_id, json{{"id", type_id}, {"tenant", 5}, {"stored_at_us", 1}, {"response", json::object()},
                       {"conversation", json::array()}}.dump());
  forged(conv_id, json{{"id", conv_id}, {"tenant", ""}, {"stored_at_us", 1}, {"response", json::object()},
                       {"conversation", {{{"role", "wizard"}, {"content", "x"}}}}}.dump());
  const std::string garbage_id = RandomId("resp_");
  put(garbage_id + ".json", "\x00\xff garbage");
  put("not-an-id.json", "left alone");
  put("resp_x.json.1234.tmp", "an interrupted write");

  ResponseStore store(Opts(&env));
  EXPECT_TRUE(store.Get(good.id, "").has_value());
  for (const std::string& id : {flipped.id, cut.id, relabeled.id, deep_id, type_id, conv_id, garbage_id}) {
    EXPECT_FALSE(store.Get(id, "").has_value()) << id;
    EXPECT_FALSE(env.FileExists(std::string(kDir) + "/" + id + ".json")) << id;  // deleted
  }
  EXPECT_EQ(store.stats().loaded, 1u);
  EXPECT_EQ(store.stats().skipped, 8u);
  EXPECT_TRUE(env.FileExists(std::string(kDir) + "/not-an-id.json"));  // not ours to judge
  EXPECT_FALSE(env.FileExists(std::string(kDir) + "/resp_x.json.1234.tmp"));
}

TEST(ResponseStore, AFailedWriteKeepsTheResponseInRam) {
  FaultInjectionEnv env;
  ResponseStore store(Opts(&env));
  ASSERT_TRUE(store.Put(Make()).ok());  // the directory exists now
  env.set_write_budget(10);             // ENOSPC mid-file
  StoredResponse r = Make();
  EXPECT_EQ(store.Put(r).code(), StatusCode::kNoSpace);
  EXPECT_TRUE(store.Get(r.id, "").has_value());
  EXPECT_EQ(store.stats().write_failures, 1u);
  EXPECT_FALSE(env.FileExists(PathOf(r)));  // no torn file under the final name
  env.set_write_budget(UINT64_MAX);
  StoredResponse later = Make();
  EXPECT_TRUE(store.Put(later).ok());
  EXPECT_TRUE(env.FileExists(PathOf(later)));
}

TEST(ResponseStore, ReadErrorsAtStartAreSkipped) {
  FaultInjectionEnv env;
  StoredResponse r = Make();
  {
    ResponseStore store(Opts(&env));
    ASSERT_TRUE(store.Put(r).ok());
  }
  env.set_read_error(true);
  ResponseStore store(Opts(&env));
  EXPECT_FALSE(store.Get(r.id, "").has_value());
  EXPECT_EQ(store.stats().skipped, 1u);
  EXPECT_TRUE(env.FileExists(PathOf(r)));  // a read error may pass: the file is kept for the next start
  env.set_read_error(false);
}

TEST(ResponseStore, ConcurrentUseKeepsItsAccountsStraight) {
  MemEnv env;
  const size_t one = EncodeStoredResponse(Make()).size();
  ResponseStore store(Opts(&env, 20 * one));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      const std::string tenant(1, static_cast<char>('a' + t));
      for (int i = 0; i < 50; ++i) {
        StoredResponse r = Make(tenant);
        EXPECT_TRUE(store.Put(r).ok());
        std::optional<StoredResponse> got = store.Get(r.id, tenant);
        if (got) {  // else already evicted by another thread's puts
          EXPECT_EQ(got->response, r.response);
        }
        if (i % 3 == 0) (void)store.Delete(r.id, tenant);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const ResponseStoreStats s = store.stats();
  EXPECT_LE(s.bytes, 20 * one + 64);
  EXPECT_GT(s.entries, 0u);
  // What the store counts is what is on disk: one file per entry (plus the lock).
  size_t files = 0;
  for (const std::string& f : env.AllFiles()) files += f.ends_with(".json");
  EXPECT_EQ(files, s.entries);
}

}  // namespace
}  // namespace ember::server
