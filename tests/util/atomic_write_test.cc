// util/atomic_write.h: the one temp-file + fsync + rename + directory-fsync helper. Crash and fault tests
// run on the in-memory fault Env, which models what survives a power cut.
#include "util/atomic_write.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/fault_injection_env.h"
#include "util/env_wrapper.h"

namespace ember {
namespace {

constexpr const char* kDir = "/d";
constexpr const char* kPath = "/d/f";

std::string Contents(Env& env, const std::string& path) {
  auto bytes = env.ReadFile(path);
  if (!bytes.ok()) return "(unreadable: " + bytes.status().message() + ")";
  return std::string(bytes->begin(), bytes->end());
}

// The new contents in three appends, so a crash can fall between them.
Status FillNew(WritableFile& f) {
  for (const char* piece : {"new-", "contents-", "in-pieces"}) EMBER_RETURN_IF_ERROR(f.Append(piece, std::strlen(piece)));
  return Status::Ok();
}
constexpr const char* kNew = "new-contents-in-pieces";

class AtomicWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.CreateDirs(kDir).ok());
    ASSERT_TRUE(WriteFileAtomically(env_, kDir, "f", std::string_view("old")).ok());
  }
  FaultInjectionEnv env_;
};

TEST_F(AtomicWriteTest, ReplacesTheFileAndLeavesNothingElse) {
  ASSERT_TRUE(WriteFileAtomically(env_, kDir, "f", FillNew).ok());
  EXPECT_EQ(Contents(env_, kPath), kNew);
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

// Once it returns OK the new file survives a power cut: the directory was synced too (gguf_writer's
// copy lacked that, so a power cut could bring back the old model).
TEST_F(AtomicWriteTest, NewFileIsDurableOnceItReturns) {
  ASSERT_TRUE(WriteFileAtomically(env_, kDir, "f", FillNew).ok());
  env_.PowerLoss();
  EXPECT_EQ(Contents(env_, kPath), kNew);
}

// A power cut before each mutating call of the write leaves the old file or the new one, whole.
TEST_F(AtomicWriteTest, CrashAtEveryStepLeavesOldOrNewWhole) {
  int64_t steps = 0;
  {
    FaultInjectionEnv probe;
    ASSERT_TRUE(probe.CreateDirs(kDir).ok());
    ASSERT_TRUE(WriteFileAtomically(probe, kDir, "f", FillNew).ok());
    steps = probe.mutating_calls();
  }
  ASSERT_GE(steps, 6);  // create, 3 appends, sync, rename, dir sync
  int saw_old = 0, saw_new = 0;
  for (int64_t n = 1; n <= steps + 1; ++n) {
    FaultInjectionEnv env;
    ASSERT_TRUE(env.CreateDirs(kDir).ok());
    ASSERT_TRUE(WriteFileAtomically(env, kDir, "f", std::string_view("old")).ok());
    env.set_crash_after(n);
    Status st = WriteFileAtomically(env, kDir, "f", FillNew);
    EXPECT_EQ(st.ok(), n > steps) << "crash at call " << n;
    env.PowerLoss();
    const std::string got = Contents(env, kPath);
    if (got == "old") {
      ++saw_old;
    } else {
      EXPECT_EQ(got, kNew) << "crash at call " << n;
      ++saw_new;
    }
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
}

TEST_F(AtomicWriteTest, FailingAppendLeavesOldFileAndNoTemp) {
  env_.set_write_budget(5);  // "new-" fits, "contents-" is a short write then ENOSPC
  Status st = WriteFileAtomically(env_, kDir, "f", FillNew);
  EXPECT_EQ(st.code(), StatusCode::kNoSpace) << st.ToString();
  EXPECT_EQ(Contents(env_, kPath), "old");
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

TEST_F(AtomicWriteTest, FailingFillLeavesOldFileAndNoTemp) {
  Status st = WriteFileAtomically(env_, kDir, "f", [](WritableFile& f) {
    EMBER_RETURN_IF_ERROR(f.Append("half", 4));
    return Internal("the producer failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(Contents(env_, kPath), "old");
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

TEST_F(AtomicWriteTest, FailingSyncLeavesOldFileAndNoTemp) {
  env_.set_sync_error(true);
  Status st = WriteFileAtomically(env_, kDir, "f", FillNew);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  env_.set_sync_error(false);
  EXPECT_EQ(Contents(env_, kPath), "old");
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

// An Env whose Rename fails (EXDEV, a full directory, ...).
class NoRenameEnv final : public EnvWrapper {
 public:
  using EnvWrapper::EnvWrapper;
  Status Rename(const std::string& from, const std::string&) override { return ErrnoStatus("rename", from, EXDEV); }
};

TEST_F(AtomicWriteTest, FailingRenameLeavesOldFileAndNoTemp) {
  NoRenameEnv env(&env_);
  Status st = WriteFileAtomically(env, kDir, "f", FillNew);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_EQ(Contents(env_, kPath), "old");
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

// The directory sync fails after the rename made the new file visible: the error is reported (the file
// may not survive a power cut) and no temp file is left.
TEST_F(AtomicWriteTest, FailingDirSyncIsReported) {
  env_.set_dir_sync_error(true);
  Status st = WriteFileAtomically(env_, kDir, "f", FillNew);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_EQ(Contents(env_, kPath), kNew);
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

// A missing directory fails at the create and removes nothing (the temp name was never ours).
TEST_F(AtomicWriteTest, MissingDirectoryFails) {
  EXPECT_FALSE(WriteFileAtomically(env_, "/nowhere", "f", FillNew).ok());
  EXPECT_EQ(env_.AllFiles(), std::vector<std::string>{kPath});
}

// On the real file system: the default mode is 0600, another mode is applied before the rename.
TEST(AtomicWritePosixTest, ModeIsAppliedWhateverTheUmask) {
  char tmpl[] = "/tmp/ember_atomic_write_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Env& env = *Env::Default();
  ASSERT_TRUE(WriteFileAtomically(env, dir, "private", std::string_view("p")).ok());
  ASSERT_TRUE(WriteFileAtomically(env, dir, "shared", std::string_view("s"), 0644).ok());
  struct stat st;
  ASSERT_EQ(::stat((dir + "/private").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat((dir + "/shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(Contents(env, dir + "/shared"), "s");
  std::vector<std::string> names = *env.GetChildren(dir);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"private", "shared"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember
