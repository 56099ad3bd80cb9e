#include "bench/eval_db.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/eval_migrations.h"

namespace ember::bench {
namespace {

class EvalDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("evaldb_" + std::to_string(::getpid()) + "_" +
                                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    path_ = (dir_ / "sub" / "evals.sqlite").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

template <typename F>
EvalFilter With(F set) {
  EvalFilter f;
  set(f);
  return f;
}

EvalRow SampleRow(const std::string& stack, const std::string& leg, double decode) {
  EvalRow r;
  r.created_at = "2026-11-29T20:00:00Z";
  r.ember_commit = "abc123def";
  r.ember_dirty = true;
  r.stack = stack;
  r.stack_version = "3.21.1";
  r.model_path = "/models/tiny-q8_0.gguf";
  r.model_hash = "00112233aabbccdd";
  r.arch = "llama";
  r.params = 600000000;
  r.dtype = "Q8_0";
  r.leg = leg;
  r.threads = 2;
  r.prompt_tokens = 512;
  r.gen_tokens = 128;
  r.cached_tokens = 0;
  r.prefill_tok_s = 350.5;
  r.decode_tok_s = decode;
  r.peak_rss_bytes = 700 << 20;
  r.n_runs = 5;
  r.spread = 1.03;
  r.tag = "stable";
  r.preflight_ok = false;
  r.machine_state = R"({"ok":false})";
  r.samples = "[[350,40],[351,41]]";
  return r;
}

TEST_F(EvalDbTest, DefaultPathFollowsXdg) {
  EXPECT_EQ(DefaultEvalDbPath("/x/data", "/home/u"), "/x/data/ember/evals.sqlite");
  EXPECT_EQ(DefaultEvalDbPath("", "/home/u"), "/home/u/.local/share/ember/evals.sqlite");
  EXPECT_EQ(DefaultEvalDbPath("relative", "/home/u"), "/home/u/.local/share/ember/evals.sqlite");
}

TEST_F(EvalDbTest, InsertAndListRoundTripsEveryColumn) {
  auto db = EvalDb::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EvalRow in = SampleRow("llama.cpp", "direct", 40.25);
  in.stack_variant = "libggml-cpu-zen4.so";
  in.context_tokens = 4096;
  auto id = (*db)->Insert(in);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto rows = (*db)->List({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const EvalRow& out = (*rows)[0];
  EXPECT_EQ(out.id, *id);
  EXPECT_EQ(out.ember_commit, "abc123def");
  EXPECT_TRUE(out.ember_dirty);
  EXPECT_EQ(out.stack_variant, "libggml-cpu-zen4.so");
  EXPECT_EQ(out.params, 600000000);
  EXPECT_EQ(out.context_tokens, 4096);
  EXPECT_FALSE(out.turn.has_value());
  EXPECT_DOUBLE_EQ(*out.decode_tok_s, 40.25);
  EXPECT_FALSE(out.ttft_ms.has_value());
  EXPECT_EQ(out.preflight_ok, false);
  EXPECT_EQ(out.samples, "[[350,40],[351,41]]");
  EXPECT_EQ(out.tag, "stable");
}

TEST_F(EvalDbTest, FiltersAndResumeLookup) {
  auto db = EvalDb::Open(path_);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Insert(SampleRow("ember", "direct", 50)).ok());
  ASSERT_TRUE((*db)->Insert(SampleRow("llama.cpp", "direct", 40)).ok());
  EvalRow late = SampleRow("ember", "served", 45);
  late.created_at = "2026-12-02T08:00:00Z";
  late.model_path = "/models/other.gguf";
  ASSERT_TRUE((*db)->Insert(late).ok());
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.stack = "ember"; }))->size(), 2u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.leg = "direct"; }))->size(), 2u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.model = "other"; }))->size(), 1u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.model = "00112233aabbccdd"; }))->size(), 3u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.since = "2026-12-01"; }))->size(), 1u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.commit = "abc"; }))->size(), 3u);
  EXPECT_EQ((*db)->List(With([](EvalFilter& f) { f.limit = 2; }))->size(), 2u);
  EXPECT_TRUE(*(*db)->HasCell("abc123def", "00112233aabbccdd", "ember", "direct", 2));
  EXPECT_FALSE(*(*db)->HasCell("abc123def", "00112233aabbccdd", "ember", "direct", 4));
  EXPECT_FALSE(*(*db)->HasCell("otherrev", "00112233aabbccdd", "ember", "direct", 2));
}

TEST_F(EvalDbTest, OldSchemaIsMigratedAndOldRowsKept) {
  {
    // Build a v1 database the way an older ember would have, with one row in it.
    auto raw = SqliteDb::Open(path_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(MigrateTo(**raw, 1).ok());
    EXPECT_EQ(*SchemaVersion(**raw), 1);
    ASSERT_TRUE((*raw)->Exec("INSERT INTO evals (created_at, ember_commit, ember_dirty, stack, model_path, leg, "
                             "decode_tok_s, tag) VALUES ('2026-01-01T00:00:00Z', 'old1', 0, 'ember', '/m.gguf', "
                             "'direct', 12.5, 'unstable')").ok());
  }
  auto db = EvalDb::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*SchemaVersion((*db)->sql()), LatestSchemaVersion());
  auto rows = (*db)->List({});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].ember_commit, "old1");
  EXPECT_DOUBLE_EQ(*(*rows)[0].decode_tok_s, 12.5);
  EXPECT_EQ((*rows)[0].tag, "unstable");
  EXPECT_FALSE((*rows)[0].turn.has_value());  // added by v2, NULL for the old row
  // New rows use the new columns alongside the old one.
  EvalRow r = SampleRow("ember", "cache-warm", 30);
  r.turn = 3;
  ASSERT_TRUE((*db)->Insert(r).ok());
  EXPECT_EQ((*(*db)->List(With([](EvalFilter& f) { f.leg = "cache-warm"; })))[0].turn, 3);
  // Reopening is a no-op migration.
  db->reset();
  auto again = EvalDb::Open(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->List({})->size(), 2u);
}

TEST_F(EvalDbTest, RefusesNewerSchema) {
  {
    auto raw = SqliteDb::Open(path_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(MigrateToLatest(**raw).ok());
    ASSERT_TRUE((*raw)->Exec("INSERT INTO schema_version(version) VALUES (999)").ok());
  }
  auto db = EvalDb::Open(path_);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(EvalDbTest, GarbageFileIsAnErrorNotACrash) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  std::ofstream(path_) << "this is not a sqlite database, just text that is long enough to have a header";
  auto db = EvalDb::Open(path_);
  EXPECT_FALSE(db.ok());
}

TEST_F(EvalDbTest, ModelHashIsCachedAndFollowsChanges) {
  std::filesystem::create_directories(dir_);
  const std::string model = (dir_ / "m.gguf").string();
  std::ofstream(model) << "GGUF model bytes v1";
  auto db = EvalDb::Open(path_);
  ASSERT_TRUE(db.ok());
  auto h1 = (*db)->ModelHash(model);
  ASSERT_TRUE(h1.ok()) << h1.status().ToString();
  EXPECT_EQ(h1->size(), 16u);
  EXPECT_EQ(*h1, *HashFileXxh3(model));
  // Cached: a planted cache entry for the same path+size+mtime is returned without re-hashing.
  ASSERT_TRUE((*db)->sql().Exec("UPDATE file_hashes SET hash = 'cafecafecafecafe'").ok());
  EXPECT_EQ(*(*db)->ModelHash(model), "cafecafecafecafe");
  // Changed size -> re-hashed.
  std::ofstream(model) << "GGUF model bytes v2, longer";
  auto h2 = (*db)->ModelHash(model);
  ASSERT_TRUE(h2.ok());
  EXPECT_NE(*h2, "cafecafecafecafe");
  EXPECT_NE(*h2, *h1);
  EXPECT_EQ((*db)->ModelHash((dir_ / "missing.gguf").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember::bench
