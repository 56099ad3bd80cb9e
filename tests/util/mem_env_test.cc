// MemEnv (tests/support/mem_env.h): the in-memory Env the cold-tier and tiered tests run on.
#include "support/mem_env.h"
#include "support/env_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ember {
namespace {

using testing::Data;
using testing::WriteSynced;

TEST(MemEnvTest, ExclusiveCreateLocksAndDirectoryAttributesAreModelled) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  ASSERT_TRUE(WriteSynced(env, "/d/f", "abc").ok());
  EXPECT_FALSE(env.NewWritableFile("/d/f").ok());
  EXPECT_EQ(*env.ReadFile("/d/f"), Data("abc"));
  EXPECT_EQ(env.Stat("/d", false)->mode, 0700u);
  EXPECT_EQ(env.Stat("/d", false)->uid, env.Uid());
  env.set_dir_attrs("/d", 4242, 0777);
  EXPECT_EQ(env.Stat("/d", false)->uid, 4242u);
  ASSERT_TRUE(env.SetPermissions("/d", 0700).ok());
  EXPECT_EQ(env.Stat("/d", false)->mode, 0700u);
  {
    auto a = env.LockFile("/d/lock");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(env.LockFile("/d/lock").status().code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_TRUE(env.LockFile("/d/lock").ok());
}

TEST(MemEnvTest, PowerLossDropsUnsyncedBytesAndUnsyncedRenames) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  ASSERT_TRUE(WriteSynced(env, "/d/synced", "abc").ok());
  ASSERT_TRUE(env.SyncDir("/d").ok());
  {
    auto f = std::move(env.NewWritableFile("/d/partial")).value();
    ASSERT_TRUE(f->Append("12", 2).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append("34", 2).ok());  // never synced
  }
  ASSERT_TRUE(env.SyncDir("/d").ok());
  ASSERT_TRUE(env.Rename("/d/synced", "/d/renamed").ok());  // no SyncDir after it
  ASSERT_TRUE(WriteSynced(env, "/d/new", "zz").ok());       // file synced, directory not
  env.PowerLoss();
  EXPECT_EQ(*env.ReadFile("/d/partial"), Data("12"));
  EXPECT_EQ(*env.ReadFile("/d/synced"), Data("abc"));
  EXPECT_FALSE(env.FileSize("/d/renamed").ok());
  EXPECT_FALSE(env.FileSize("/d/new").ok());
}

TEST(MemEnvTest, ChildrenListsFilesAndSubdirectories) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/r/a/x").ok());
  ASSERT_TRUE(WriteSynced(env, "/r/a/f", "1").ok());
  auto kids = std::move(env.GetChildren("/r/a")).value();
  std::sort(kids.begin(), kids.end());
  EXPECT_EQ(kids, (std::vector<std::string>{"f", "x"}));
  EXPECT_TRUE(env.DirExists("/r/a/x"));
  EXPECT_EQ(env.GetChildren("/nope").status().code(), StatusCode::kNotFound);
}

TEST(MemEnvTest, MapFileIsACopyOfTheBytesAndRefusesDirectoriesAndMissingFiles) {
  MemEnv env;
  env.PutDurableFile("/m.gguf", Data("GGUF...."));
  auto map = env.MapFile("/m.gguf");
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*map)->data()), (*map)->size()), "GGUF....");
  ASSERT_TRUE(env.FlipByte("/m.gguf", 0).ok());  // later changes do not reach a region already handed out
  EXPECT_EQ((*map)->data()[0], 'G');
  env.PutDurableFile("/empty", {});
  EXPECT_EQ((*env.MapFile("/empty"))->size(), 0u);
  EXPECT_EQ(env.MapFile("/nope").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  EXPECT_EQ(env.MapFile("/d").status().code(), StatusCode::kInvalidArgument);
}

TEST(MemEnvTest, OneFakeClockServesBothClocksAndSleepingAdvancesIt) {
  MemEnv env;
  const int64_t t0 = env.WallMicros();
  EXPECT_EQ(env.MonotonicMicros(), t0);
  env.SleepForMicros(1500);
  EXPECT_EQ(env.WallMicros(), t0 + 1500);
  env.AdvanceMicros(500);
  EXPECT_EQ(env.MonotonicMicros(), t0 + 2000);
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  ASSERT_TRUE(WriteSynced(env, "/d/f", "x").ok());
  EXPECT_EQ(*env.GetMtimeMicros("/d/f"), t0 + 2000);  // files are stamped with the fake clock
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(env.WaitUntil(&cv, &mu, t0 + 2000));    // already due: no wait
  EXPECT_FALSE(env.WaitUntil(&cv, &mu, t0 + 10'000));  // the fake clock does not move by itself
}

}  // namespace
}  // namespace ember
