// ColdStore and its directories (docs/coldtier.md "Directory safety"): refused directories, the
// per-identity lock (two stores, two processes), modes on disk, links planted at entry and namespace
// paths.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "coldtier/cold_store.h"
#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "support/held_child.h"
#include "test_state.h"
#include "support/test_support.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::MakeState;
using coldtier_test::SmallConfig;
using coldtier_test::Tokens;

bool Has(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

ColdStoreOptions Options(const std::string& root, const std::string& identity = "model-a") {
  return ColdStoreOptions{root, identity, SmallConfig(), 0, true};
}

TEST(ColdStoreDirTest, AWritableOrForeignDirectoryAnywhereOnThePathRefusesTheStore) {
  FaultInjectionEnv env;
  {
    auto store = std::move(ColdStore::Open(env, Options("/cache"))).value();
    ASSERT_TRUE(store->Put("ns", Tokens(4), MakeState(4, 1)).ok());
  }
  std::string real_ns;
  for (const std::string& f : env.AllFiles()) {
    if (f.ends_with(kEntryExtension)) real_ns = f.substr(0, f.find_last_of('/'));
  }
  ASSERT_FALSE(real_ns.empty());
  struct Case {
    std::string dir;
    uint32_t uid, mode;
    std::string says;
  };
  for (const Case& c : {Case{"/cache", FaultInjectionEnv::kUid, 0777, "/cache is writable by group or others"},
                        Case{"/cache", 4242, 0700, "/cache is owned by uid 4242"},
                        Case{"/cache/model-a", FaultInjectionEnv::kUid, 0770, "/cache/model-a is writable"},
                        Case{"/cache/model-a", 4242, 0700, "/cache/model-a is owned by uid 4242"},
                        Case{real_ns, FaultInjectionEnv::kUid, 0757, real_ns + " is writable"},
                        Case{real_ns, 4242, 0700, real_ns + " is owned by uid 4242"}}) {
    env.set_dir_attrs(c.dir, c.uid, c.mode);
    auto s = ColdStore::Open(env, Options("/cache"));
    ASSERT_FALSE(s.ok()) << c.dir;
    EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(Has(s.status(), c.says)) << s.status().message();
    env.set_dir_attrs(c.dir, FaultInjectionEnv::kUid, 0700);
  }
  // Nothing was deleted while refusing, and with the directories fixed the entry is served again.
  auto store = ColdStore::Open(env, Options("/cache"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->entries(), 1u);
}

TEST(ColdStoreDirTest, OneStorePerIdentityDirectoryOtherIdentitiesAreIndependent) {
  FaultInjectionEnv env;
  auto first = std::move(ColdStore::Open(env, Options("/cache"))).value();
  auto second = ColdStore::Open(env, Options("/cache"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(second.status(), "/cache/model-a is in use by another process")) << second.status().message();
  EXPECT_TRUE(Has(second.status(), "--ssd-cache")) << second.status().message();
  EXPECT_TRUE(ColdStore::Open(env, Options("/cache", "model-b")).ok());  // another model, same root
  first.reset();
  EXPECT_TRUE(ColdStore::Open(env, Options("/cache")).ok());
}

TEST(ColdStoreDirTest, DirectoriesAnOlderEmberLeftReadableAreTightened) {
  FaultInjectionEnv env;
  {
    auto store = std::move(ColdStore::Open(env, Options("/cache"))).value();
    ASSERT_TRUE(store->Put("ns", Tokens(4), MakeState(4, 1)).ok());
    env.set_dir_attrs(store->dir(), FaultInjectionEnv::kUid, 0755);
    env.set_dir_attrs(store->NamespaceDir("ns"), FaultInjectionEnv::kUid, 0755);
  }
  env.set_dir_attrs("/cache", FaultInjectionEnv::kUid, 0755);
  auto store = std::move(ColdStore::Open(env, Options("/cache"))).value();
  EXPECT_EQ(store->entries(), 1u);
  EXPECT_EQ(env.Stat(store->dir(), false)->mode, 0700u);
  EXPECT_EQ(env.Stat(store->NamespaceDir("ns"), false)->mode, 0700u);
  EXPECT_EQ(env.Stat("/cache", false)->mode, 0755u);  // the user's directory: their choice, and safe
}

class ColdStoreDirPosixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ember_cold_dir_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/cache";
  }
  void TearDown() override { EXPECT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }
  static uint32_t ModeOf(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  std::string dir_, root_;
  Env& env_ = *PosixEnv::Default();
};

TEST_F(ColdStoreDirPosixTest, EntriesAre0600AndDirectories0700OnDiskEvenWithAPermissiveUmask) {
  const mode_t old = ::umask(0);
  std::string entry;
  {
    auto store = std::move(ColdStore::Open(env_, Options(root_))).value();
    ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 4)).ok());
    entry = store->Find(Tokens(8), "ns")->path;
    EXPECT_EQ(ModeOf(root_), 0700u);
    EXPECT_EQ(ModeOf(store->dir()), 0700u);
    EXPECT_EQ(ModeOf(store->NamespaceDir("ns")), 0700u);
    EXPECT_EQ(ModeOf(entry), 0600u);
    EXPECT_EQ(ModeOf(store->dir() + "/" + kLockFileName), 0600u);
  }
  ::umask(old);
}

TEST_F(ColdStoreDirPosixTest, ChmodAnyoneWritableTurnsTheStoreAway) {
  { ASSERT_TRUE(ColdStore::Open(env_, Options(root_)).ok()); }
  ASSERT_EQ(::chmod(root_.c_str(), 0777), 0);
  auto s = ColdStore::Open(env_, Options(root_));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.status(), root_ + " is writable by group or others (mode 0777)")) << s.status().message();
  EXPECT_TRUE(Has(s.status(), "chmod 700 " + root_)) << s.status().message();
}

TEST_F(ColdStoreDirPosixTest, ALinkPlantedAtTheOldPredictableTempNameIsNeverWrittenThrough) {
  const std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "precious"; }
  auto store = std::move(ColdStore::Open(env_, Options(root_))).value();
  ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 1)).ok());
  const std::string entry = store->Find(Tokens(8), "ns")->path;
  // Writes used to go to "<id>.tmp" with O_TRUNC: a link there sent the entry's bytes into the victim.
  const std::string old_tmp = entry.substr(0, entry.size() - std::string(kEntryExtension).size()) + kTempExtension;
  ASSERT_EQ(::symlink(victim.c_str(), old_tmp.c_str()), 0);
  ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 2)).ok());
  EXPECT_EQ(testing::ReadFileToString(victim), "precious");
  auto r = store->Restore(*store->Find(Tokens(8), "ns"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Bytes(*r), Bytes(MakeState(7, 2)));
}

TEST_F(ColdStoreDirPosixTest, ALinkPlantedAtTheEntryNameIsReplacedNeverFollowed) {
  const std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "precious"; }
  auto store = std::move(ColdStore::Open(env_, Options(root_))).value();
  ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 1)).ok());
  const std::string entry = store->Find(Tokens(8), "ns")->path;
  ASSERT_EQ(::unlink(entry.c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), entry.c_str()), 0);
  ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 2)).ok());  // same tokens: the same final name
  EXPECT_EQ(testing::ReadFileToString(victim), "precious");
  struct stat st;
  ASSERT_EQ(::lstat(entry.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  auto r = store->Restore(*store->Find(Tokens(8), "ns"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Bytes(*r), Bytes(MakeState(7, 2)));
}

TEST_F(ColdStoreDirPosixTest, TheScanNeverFollowsALinkedNamespaceDirectoryOrEntry) {
  // Files elsewhere that a scan through links would delete (a ".tmp", an ".entry" that is not one).
  const std::string elsewhere = dir_ + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  { std::ofstream(elsewhere + "/draft.tmp") << "keep me"; }
  { std::ofstream(elsewhere + "/notes.entry") << "keep me too"; }
  std::string id_dir, ns_dir;
  {
    auto store = std::move(ColdStore::Open(env_, Options(root_))).value();
    ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 1)).ok());
    id_dir = store->dir();
    ns_dir = store->NamespaceDir("ns");
  }
  ASSERT_EQ(::symlink(elsewhere.c_str(), (id_dir + "/00000000deadbeef").c_str()), 0);
  ASSERT_EQ(::symlink((elsewhere + "/notes.entry").c_str(), (ns_dir + "/0000000000000001.entry").c_str()), 0);
  auto store = ColdStore::Open(env_, Options(root_));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->entries(), 1u);
  EXPECT_EQ(testing::ReadFileToString(elsewhere + "/draft.tmp"), "keep me");
  EXPECT_EQ(testing::ReadFileToString(elsewhere + "/notes.entry"), "keep me too");
  EXPECT_EQ((*store)->counters().corrupt_deleted, 1u);  // the entry-named link itself (only the link)
}

TEST_F(ColdStoreDirPosixTest, ASecondProcessOnTheSameDirectoryIsToldWhoHoldsIt) {
  testing::HeldChild child([&] {
    auto store = ColdStore::Open(*PosixEnv::Default(), Options(root_));
    if (!store.ok()) return 'n';
    (void)std::move(store).value().release();  // held (with its lock) until the child dies
    return 'y';
  });
  ASSERT_EQ(child.report(), 'y');
  auto second = ColdStore::Open(env_, Options(root_));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(Has(second.status(), "is in use by another process")) << second.status().message();
  EXPECT_TRUE(Has(second.status(), "pid " + std::to_string(child.pid()))) << second.status().message();
  ASSERT_TRUE(child.Kill());  // a crashed server does not leave the directory locked
  EXPECT_TRUE(ColdStore::Open(env_, Options(root_)).ok());
}

TEST_F(ColdStoreDirPosixTest, AFifoAtAnEntryNameIsDeletedAtTheScanNotWaitedOn) {
  // Opening a FIFO without a writer blocks forever. The scan sizes a file before opening it (a FIFO is
  // 0 bytes: corrupt), so it never did open one; this pins that (and the Env now refuses non-regular
  // files itself, env_test). The alarm turns a hang into a failure.
  ::alarm(30);
  std::string ns_dir;
  {
    auto store = std::move(ColdStore::Open(env_, Options(root_))).value();
    ASSERT_TRUE(store->Put("ns", Tokens(7), MakeState(7, 1)).ok());
    ns_dir = store->NamespaceDir("ns");
  }
  const std::string fifo = ns_dir + "/00000000000000ff.entry";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto store = ColdStore::Open(env_, Options(root_));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->entries(), 1u);
  EXPECT_EQ((*store)->counters().corrupt_deleted, 1u);
  struct stat st;
  EXPECT_NE(::lstat(fifo.c_str(), &st), 0);  // removed
  ::alarm(0);
}

}  // namespace
}  // namespace ember
