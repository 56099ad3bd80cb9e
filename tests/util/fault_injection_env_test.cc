// FaultInjectionEnv (tests/support/fault_injection_env.h): a MemEnv with ENOSPC, short writes, EIO,
// fsync failures and crash points armed on top.
#include "support/fault_injection_env.h"
#include "support/env_test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ember {
namespace {

using testing::Data;
using testing::WriteSynced;

TEST(FaultInjectionEnvTest, WriteBudgetGivesShortWriteThenNoSpace) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  env.set_write_budget(3);
  auto f = std::move(env.NewWritableFile("/d/f")).value();
  Status st = f->Append("hello", 5);
  EXPECT_EQ(st.code(), StatusCode::kNoSpace);
  EXPECT_EQ(*env.ReadFile("/d/f"), Data("hel"));
  env.set_write_budget(0, StatusCode::kIoError);
  EXPECT_EQ(f->Append("x", 1).code(), StatusCode::kIoError);
}

TEST(FaultInjectionEnvTest, ReadAndSyncErrors) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  ASSERT_TRUE(WriteSynced(env, "/d/f", "abc").ok());
  env.set_read_error(true);
  EXPECT_EQ(env.ReadFile("/d/f").status().code(), StatusCode::kIoError);
  char b[1];
  EXPECT_EQ(env.ReadRange("/d/f", 0, 1, b).code(), StatusCode::kIoError);
  env.set_read_error(false);
  env.set_sync_error(true);
  auto f = std::move(env.NewWritableFile("/d/g")).value();
  ASSERT_TRUE(f->Append("q", 1).ok());
  EXPECT_EQ(f->Sync().code(), StatusCode::kIoError);
  EXPECT_EQ(env.SyncDir("/d").code(), StatusCode::kIoError);
}

TEST(FaultInjectionEnvTest, CrashAfterNthCallFailsEverythingAfter) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  env.set_crash_after(2);  // the open succeeds, the first append is the crash point
  auto f = std::move(env.NewWritableFile("/d/f")).value();
  EXPECT_FALSE(f->Append("a", 1).ok());
  EXPECT_TRUE(env.crashed());
  EXPECT_FALSE(env.Rename("/d/f", "/d/g").ok());
  EXPECT_EQ(*env.FileSize("/d/f"), 0u);  // the failed append had no effect
  env.PowerLoss();
  EXPECT_FALSE(env.crashed());
  EXPECT_FALSE(env.FileSize("/d/f").ok());  // created but its directory was never synced
  EXPECT_TRUE(WriteSynced(env, "/d/h", "ok").ok());
}

TEST(FaultInjectionEnvTest, AReadErrorHidesNoMissingFileAndADirSyncErrorSparesFileSyncs) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  env.set_read_error(true);
  EXPECT_EQ(env.ReadFile("/d/missing").status().code(), StatusCode::kNotFound);
  env.set_read_error(false);
  env.set_dir_sync_error(true);
  auto f = std::move(env.NewWritableFile("/d/f")).value();
  ASSERT_TRUE(f->Append("ab", 2).ok());
  EXPECT_TRUE(f->Sync().ok());
  ASSERT_TRUE(env.Rename("/d/f", "/d/g").ok());
  EXPECT_EQ(env.SyncDir("/d").code(), StatusCode::kIoError);
  EXPECT_EQ(env.SyncDir("/nope").code(), StatusCode::kNotFound);
  env.PowerLoss();  // the failed SyncDir made nothing durable
  EXPECT_FALSE(env.FileSize("/d/g").ok());
  EXPECT_FALSE(env.FileSize("/d/f").ok());
}

TEST(FaultInjectionEnvTest, PowerLossThroughTheMemEnvBaseAlsoRebootsTheMachine) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  env.set_crash_after(1);
  EXPECT_FALSE(env.NewWritableFile("/d/f").ok());
  EXPECT_TRUE(env.crashed());
  MemEnv& base = env;
  base.PowerLoss();
  EXPECT_FALSE(env.crashed());
  EXPECT_TRUE(WriteSynced(env, "/d/f", "ok").ok());
  EXPECT_EQ(env.mutating_calls(), 4);  // the crashed open, then open, append and sync (Close is not counted)
}

}  // namespace
}  // namespace ember
