#include "coldtier/private_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "support/fault_injection_env.h"

namespace ember {
namespace {

bool Has(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(PrivateDirTest, RefusesAnotherUsersOrAWritableDirectoryNamingPathAndFix) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/c/id").ok());
  EXPECT_TRUE(CheckPrivateDir(env, "/c", DirRole::kRoot).ok());

  env.set_dir_attrs("/c", 4242, 0700);
  Status other = CheckPrivateDir(env, "/c", DirRole::kRoot);
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(other, "/c is owned by uid 4242")) << other.message();
  EXPECT_TRUE(Has(other, "chown")) << other.message();
  EXPECT_FALSE(EnsurePrivateDir(env, "/c", DirRole::kRoot).ok());

  for (uint32_t mode : {0777u, 0770u, 0702u, 01777u}) {
    env.set_dir_attrs("/c/id", FaultInjectionEnv::kUid, mode);
    Status writable = CheckPrivateDir(env, "/c/id", DirRole::kOwn);
    EXPECT_EQ(writable.code(), StatusCode::kFailedPrecondition) << mode;
    EXPECT_TRUE(Has(writable, "/c/id is writable by group or others")) << writable.message();
    EXPECT_TRUE(Has(writable, "chmod 700 /c/id")) << writable.message();
    EXPECT_FALSE(EnsurePrivateDir(env, "/c/id", DirRole::kOwn).ok());
    EXPECT_EQ(env.Stat("/c/id", false)->mode, mode);  // refused, not "fixed" behind the user's back
  }
  EXPECT_EQ(CheckPrivateDir(env, "/nope", DirRole::kRoot).code(), StatusCode::kNotFound);
}

TEST(PrivateDirTest, CreatesMissingAndTightensOnlyDirectoriesEmberKeeps) {
  FaultInjectionEnv env;
  ASSERT_TRUE(EnsurePrivateDir(env, "/r/new/id", DirRole::kOwn).ok());
  EXPECT_EQ(env.Stat("/r/new/id", false)->mode, 0700u);
  // An older ember made its directories 0755: readable by everyone, so the entries inside were too.
  env.set_dir_attrs("/r/new/id", FaultInjectionEnv::kUid, 0755);
  ASSERT_TRUE(EnsurePrivateDir(env, "/r/new/id", DirRole::kOwn).ok());
  EXPECT_EQ(env.Stat("/r/new/id", false)->mode, 0700u);
  // The directory the user named keeps a mode that passes (their choice, e.g. 0750 for a group of readers).
  env.set_dir_attrs("/r/new", FaultInjectionEnv::kUid, 0750);
  ASSERT_TRUE(EnsurePrivateDir(env, "/r/new", DirRole::kRoot).ok());
  EXPECT_EQ(env.Stat("/r/new", false)->mode, 0750u);
}

class PrivateDirPosixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ember_private_dir_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { EXPECT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }
  std::string dir_;
  Env& env_ = *PosixEnv::Default();
};

TEST_F(PrivateDirPosixTest, WorldWritableAndLinkedDirectoriesAreRefused) {
  EXPECT_TRUE(CheckPrivateDir(env_, dir_, DirRole::kRoot).ok());
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  Status st = EnsurePrivateDir(env_, dir_, DirRole::kRoot);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(st, dir_ + " is writable by group or others (mode 0777)")) << st.message();
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  // The root may be reached through a link (~/.cache -> /data/cache); a directory inside may not.
  const std::string real = dir_ + "/real", link = dir_ + "/link";
  ASSERT_TRUE(EnsurePrivateDir(env_, real, DirRole::kOwn).ok());
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  EXPECT_TRUE(EnsurePrivateDir(env_, link, DirRole::kRoot).ok());
  Status linked = EnsurePrivateDir(env_, link, DirRole::kOwn);
  EXPECT_EQ(linked.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(linked, link + " is a symbolic link")) << linked.message();
  // A file in the way.
  ASSERT_EQ(std::system(("touch '" + dir_ + "/file'").c_str()), 0);
  EXPECT_FALSE(EnsurePrivateDir(env_, dir_ + "/file", DirRole::kRoot).ok());
}

TEST_F(PrivateDirPosixTest, ADirectoryOwnedByAnotherUserIsRefused) {
  // As root, hand the directory to "nobody"; as anyone else, "/" is already another user's (root's).
  const bool root = ::geteuid() == 0;
  const std::string theirs(root ? dir_ : std::string(1, '/'));
  if (root) {
    ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
  }
  Status st = CheckPrivateDir(env_, theirs, DirRole::kRoot);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(st, theirs + " is owned by uid ")) << st.message();
  std::string me = "not by this user (uid ";  // appends: GCC 12 warns falsely on a chain of operator+
  me += std::to_string(::geteuid());
  EXPECT_TRUE(Has(st, me)) << st.message();
}

}  // namespace
}  // namespace ember
