#include "util/env.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "support/held_child.h"
#include "support/test_support.h"
#include "support/env_test_util.h"

namespace ember {
namespace {

using testing::Data;
using testing::WriteSynced;

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

uint32_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Sets the umask for one scope (tests must not leak it into the rest of the binary).
struct ScopedUmask {
  explicit ScopedUmask(mode_t m) : old(::umask(m)) {}
  ~ScopedUmask() { ::umask(old); }
  mode_t old;
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
  EXPECT_GT(env_.WallMicros(), 1'600'000'000'000'000);
}

TEST_F(PosixEnvTest, FilesAre0600AndDirectories0700WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    ScopedUmask umask(mask);
    const std::string sub = JoinPath(dir_, "u" + std::to_string(mask));
    ASSERT_TRUE(env_.CreateDirs(JoinPath(sub, "inner")).ok());
    EXPECT_EQ(ModeOf(sub), 0700u) << "umask " << mask;
    EXPECT_EQ(ModeOf(JoinPath(sub, "inner")), 0700u) << "umask " << mask;
    const std::string f = JoinPath(sub, "f");
    ASSERT_TRUE(WriteSynced(env_, f, "x").ok());
    EXPECT_EQ(ModeOf(f), 0600u) << "umask " << mask;
    auto lock = env_.LockFile(JoinPath(sub, "lock"));
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    EXPECT_EQ(ModeOf(JoinPath(sub, "lock")), 0600u) << "umask " << mask;
  }
  // An existing directory keeps its mode (whether it may be used is private_dir.h's call).
  ASSERT_EQ(::chmod(dir_.c_str(), 0750), 0);
  ASSERT_TRUE(env_.CreateDirs(dir_).ok());
  EXPECT_EQ(ModeOf(dir_), 0750u);
}

TEST_F(PosixEnvTest, NewFilesAreExclusiveAndAPlantedLinkIsNeverFollowed) {
  const std::string victim = JoinPath(dir_, "victim");
  { std::ofstream(victim) << "precious"; }
  // An existing file is not truncated or reused.
  EXPECT_FALSE(env_.NewWritableFile(victim).ok());
  EXPECT_EQ(testing::ReadFileToString(victim), "precious");
  // A link (to an existing file, or dangling) at the name is neither followed nor replaced.
  const std::string link = JoinPath(dir_, "x.tmp"), dangling = JoinPath(dir_, "y.tmp");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(::symlink(JoinPath(dir_, "created-through-link").c_str(), dangling.c_str()), 0);
  EXPECT_FALSE(env_.NewWritableFile(link).ok());
  EXPECT_FALSE(env_.NewWritableFile(dangling).ok());
  EXPECT_EQ(testing::ReadFileToString(victim), "precious");
  EXPECT_FALSE(env_.DirExists(JoinPath(dir_, "created-through-link")));
  EXPECT_EQ(::access(JoinPath(dir_, "created-through-link").c_str(), F_OK), -1);
  // Reads, sizes and mtimes do not go through a link at the last component either.
  EXPECT_FALSE(env_.ReadFile(link).ok());
  EXPECT_NE(env_.ReadFile(link).status().message().find("symbolic link"), std::string::npos);
  EXPECT_FALSE(env_.FileSize(link).ok());
  const int64_t before = *env_.GetMtimeMicros(victim);
  (void)env_.SetMtimeMicros(link, 1'000'000);
  EXPECT_EQ(*env_.GetMtimeMicros(victim), before);
  // chmod does not go through one.
  ASSERT_EQ(::chmod(victim.c_str(), 0640), 0);
  EXPECT_FALSE(env_.SetPermissions(link, 0777).ok());
  EXPECT_EQ(ModeOf(victim), 0640u);
  // Renaming over a link replaces the link itself: the file it pointed to is untouched.
  ASSERT_TRUE(WriteSynced(env_, JoinPath(dir_, "z.tmp"), "fresh").ok());
  ASSERT_TRUE(env_.Rename(JoinPath(dir_, "z.tmp"), link).ok());
  EXPECT_EQ(testing::ReadFileToString(link), "fresh");
  EXPECT_EQ(testing::ReadFileToString(victim), "precious");
}

TEST_F(PosixEnvTest, StatReportsTypeModeAndOwnerWithOrWithoutFollowingLinks) {
  const std::string f = JoinPath(dir_, "f"), link = JoinPath(dir_, "l");
  ASSERT_TRUE(WriteSynced(env_, f, "1").ok());
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  auto fi = env_.Stat(f, false);
  ASSERT_TRUE(fi.ok());
  EXPECT_EQ(fi->type, PathInfo::Type::kFile);
  EXPECT_EQ(fi->mode, 0600u);
  EXPECT_EQ(fi->uid, env_.Uid());
  EXPECT_EQ(env_.Uid(), ::geteuid());
  EXPECT_EQ(env_.Stat(link, false)->type, PathInfo::Type::kSymlink);
  EXPECT_EQ(env_.Stat(link, true)->type, PathInfo::Type::kDir);
  EXPECT_EQ(env_.Stat(JoinPath(dir_, "nope"), false).status().code(), StatusCode::kNotFound);
}

TEST(TempNameTest, FreshUnpredictableNamesThatEndInTmp) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string n = TempName("abc.entry");
    EXPECT_EQ(n.rfind("abc.entry.", 0), 0u) << n;
    EXPECT_TRUE(n.ends_with(".tmp")) << n;
    EXPECT_EQ(n.size(), std::string("abc.entry.").size() + 16 + 4) << n;
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST_F(PosixEnvTest, LockIsExclusiveWithinAndAcrossProcessesAndDiesWithItsHolder) {
  const std::string path = JoinPath(dir_, "lock");
  {
    auto first = env_.LockFile(path);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto second = env_.LockFile(path);  // a second descriptor, same process: excluded too
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
        << second.status().message();
  }
  // Another process takes it and holds it until killed with SIGKILL.
  testing::HeldChild child([&] {
    auto held = PosixEnv::Default()->LockFile(path);
    if (!held.ok()) return 'n';
    (void)std::move(held).value().release();  // held until the child dies
    return 'y';
  });
  ASSERT_EQ(child.report(), 'y');
  auto busy = env_.LockFile(path);
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().message().find("pid " + std::to_string(child.pid())), std::string::npos)
      << busy.status().message();
  ASSERT_TRUE(child.Kill());
  EXPECT_TRUE(env_.LockFile(path).ok());  // the kernel released it with the process
}

TEST_F(PosixEnvTest, AFifoAtAFileNameIsAnErrorNeverAWait) {
  // A FIFO without a writer blocks open(O_RDONLY) forever: before the fix this test hung here, and
  // the alarm (default action: terminate) turns a hang into a failure of the binary.
  ::alarm(30);
  const std::string fifo = JoinPath(dir_, "x.entry");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto read = env_.ReadFile(fifo);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("not a regular file"), std::string::npos) << read.status().message();
  uint8_t b[4];
  EXPECT_FALSE(env_.ReadRange(fifo, 0, sizeof b, b).ok());
  EXPECT_FALSE(env_.FileSize(fifo).ok());
  EXPECT_FALSE(env_.LockFile(fifo).ok());
  // A directory is not a file either.
  EXPECT_FALSE(env_.ReadFile(dir_).ok());
  EXPECT_FALSE(env_.FileSize(dir_).ok());
  ::alarm(0);
}

TEST_F(PosixEnvTest, MapFileMapsInputsThroughLinksButNeverWaitsOnAFifo) {
  const std::string model = JoinPath(dir_, "m.gguf"), link = JoinPath(dir_, "link.gguf");
  ASSERT_TRUE(WriteSynced(env_, model, "GGUF weights").ok());
  ASSERT_EQ(::symlink(model.c_str(), link.c_str()), 0);
  for (const std::string& path : {model, link}) {  // a model is often a link into a download cache
    auto map = env_.MapFile(path);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>((*map)->data()), (*map)->size()), "GGUF weights");
  }
  ASSERT_TRUE(WriteSynced(env_, JoinPath(dir_, "empty"), "").ok());
  auto empty = env_.MapFile(JoinPath(dir_, "empty"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
  EXPECT_EQ(env_.MapFile(JoinPath(dir_, "nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env_.MapFile(dir_).status().code(), StatusCode::kInvalidArgument);
  // Opening a FIFO without a writer for reading blocks: before the fix `ember serve --model <fifo>`
  // hung here; the alarm turns a hang into a failure of the binary.
  ::alarm(30);
  const std::string fifo = JoinPath(dir_, "fifo.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto map = env_.MapFile(fifo);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(map.status().message().find("not a regular file"), std::string::npos) << map.status().message();
  ::alarm(0);
}

}  // namespace
}  // namespace ember
