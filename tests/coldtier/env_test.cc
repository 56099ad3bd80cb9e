#include "coldtier/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "coldtier/fault_env.h"

namespace ember {
namespace {

std::vector<uint8_t> Data(const std::string& s) { return {s.begin(), s.end()}; }

Status WriteSynced(Env& env, const std::string& path, const std::string& s, bool sync = true) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env.NewWritableFile(path));
  EMBER_RETURN_IF_ERROR(f->Append(s.data(), s.size()));
  if (sync) EMBER_RETURN_IF_ERROR(f->Sync());
  return f->Close();
}

class PosixEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ember_env_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { EXPECT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }
  std::string dir_;
  Env& env_ = *PosixEnv::Default();
};

TEST_F(PosixEnvTest, WriteReadRenameListRemove) {
  std::string sub = JoinPath(dir_, "a/b");
  ASSERT_TRUE(env_.CreateDirs(sub).ok());
  ASSERT_TRUE(env_.CreateDirs(sub).ok());  // existing is fine
  std::string tmp = JoinPath(sub, "x.tmp"), fin = JoinPath(sub, "x.entry");
  ASSERT_TRUE(WriteSynced(env_, tmp, "hello world").ok());
  ASSERT_TRUE(env_.Rename(tmp, fin).ok());
  ASSERT_TRUE(env_.SyncDir(sub).ok());
  EXPECT_EQ(*env_.ReadFile(fin), Data("hello world"));
  char buf[5];
  ASSERT_TRUE(env_.ReadRange(fin, 6, 5, buf).ok());
  EXPECT_EQ(std::string(buf, 5), "world");
  EXPECT_EQ(env_.ReadRange(fin, 8, 5, buf).code(), StatusCode::kCorrupt);  // past the end
  EXPECT_EQ(*env_.FileSize(fin), 11u);
  auto kids = env_.GetChildren(sub);
  ASSERT_TRUE(kids.ok());
  EXPECT_EQ(*kids, std::vector<std::string>{"x.entry"});
  ASSERT_TRUE(env_.SetMtimeMicros(fin, 1'500'000'000'000'000).ok());
  EXPECT_EQ(*env_.GetMtimeMicros(fin), 1'500'000'000'000'000);
  ASSERT_TRUE(env_.RemoveFile(fin).ok());
  EXPECT_EQ(env_.FileSize(fin).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env_.RemoveFile(fin).code(), StatusCode::kNotFound);
  EXPECT_TRUE(env_.DirExists(sub));
  EXPECT_FALSE(env_.DirExists(JoinPath(sub, "nope")));
  EXPECT_GT(env_.NowMicros(), 1'600'000'000'000'000);
}

TEST(FaultEnvTest, PowerLossDropsUnsyncedBytesAndUnsyncedRenames) {
  FaultInjectionEnv env;
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

TEST(FaultEnvTest, WriteBudgetGivesShortWriteThenNoSpace) {
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

TEST(FaultEnvTest, ReadAndSyncErrors) {
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

TEST(FaultEnvTest, CrashAfterNthCallFailsEverythingAfter) {
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

TEST(FaultEnvTest, ChildrenListsFilesAndSubdirectories) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/r/a/x").ok());
  ASSERT_TRUE(WriteSynced(env, "/r/a/f", "1").ok());
  auto kids = std::move(env.GetChildren("/r/a")).value();
  std::sort(kids.begin(), kids.end());
  EXPECT_EQ(kids, (std::vector<std::string>{"f", "x"}));
  EXPECT_TRUE(env.DirExists("/r/a/x"));
  EXPECT_EQ(env.GetChildren("/nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember
