// The SSD cold tier behind `ember serve`'s real backend, on tiny generated models: restart survival with
// bitwise-identical output, corrupt and truncated files (detected, deleted, counted, answer unchanged),
// foreign identity directories left alone, two weight files of one architecture never sharing entries,
// stats and flush.
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "server/engine_backend.h"
#include "support/test_support.h"

namespace ember::server {
namespace {

namespace fs = std::filesystem;

// "m<seed>.gguf", built with appends (GCC 12 warns falsely on a chain of string operator+ here).
std::string ModelName(int seed) {
  std::string name = "m";
  name += std::to_string(seed);
  name += ".gguf";
  return name;
}

class EngineBackendSsdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (int seed : {7, 8}) {  // same architecture and shapes, different weights
      const std::string cmd = testing::EmberBinary() + " gen-model --out " + dir_->file(ModelName(seed)) +
                              " --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32 --seed " +
                              std::to_string(seed) + " > /dev/null";
      ASSERT_EQ(testing::RunCommand(cmd).exit_code, 0);
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    root_ = (dir_->path() / ("ssd-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()))).string();
  }

  std::unique_ptr<InferenceBackend> Backend(int seed = 7, bool ssd = true, std::string ram = "256M") {
    ServeOptions o;
    o.model_path = dir_->file(ModelName(seed));
    o.prompt_cache_bytes = ram;
    if (ssd) o.ssd_cache_dir = root_;
    auto b = CreateEngineBackend(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  static std::vector<int32_t> Prompt() {
    std::vector<int32_t> p;
    for (int i = 0; i < 60; ++i) p.push_back(200 + (i * 37) % 300);
    return p;
  }

  struct Run {
    std::vector<int32_t> tokens;
    GenerationResult result;
  };
  static Run Generate(InferenceBackend& b, const std::vector<int32_t>& prompt) {
    GenerationRequest req;
    req.prompt = prompt;
    req.max_tokens = 10;
    req.sampling.temperature = 0;
    Run r;
    Status st = b.Generate(req, [&](const TokenEvent& ev) { r.tokens.push_back(ev.id); return true; }, &r.result);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return r;
  }

  std::vector<std::string> EntryFiles() const {
    std::vector<std::string> out;
    if (!fs::exists(root_)) return out;
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.path().extension() == ".entry") out.push_back(e.path().string());
    }
    return out;
  }
  static double Value(const BackendStats& s, const std::string& tier, const std::string& name) {
    for (const CacheTierStats& t : s.cache_tiers) {
      if (t.tier != tier) continue;
      for (const StatValue& v : t.values) {
        if (v.name == name) return v.value;
      }
    }
    ADD_FAILURE() << "no stat " << tier << "." << name;
    return -1;
  }

  static testing::TempDir* dir_;
  std::string root_;
};
testing::TempDir* EngineBackendSsdTest::dir_ = nullptr;

TEST_F(EngineBackendSsdTest, APrefixCachedBeforeARestartIsRestoredAfterItWithIdenticalOutput) {
  Run cold;
  {
    auto b = Backend(7, /*ssd=*/false, "0");  // no cache at all: the reference answer
    cold = Generate(*b, Prompt());
    EXPECT_EQ(cold.result.cached_tokens, 0);
  }
  {
    auto b = Backend();
    Run first = Generate(*b, Prompt());
    EXPECT_EQ(first.tokens, cold.tokens);
    ASSERT_TRUE(b->FlushCache().ok());
    EXPECT_GE(EntryFiles().size(), 1u);
    EXPECT_GT(Value(b->Stats(), "ssd", "last_durable_flush_unix_s"), 0);
  }
  auto b = Backend();  // "restart": a new process would see exactly these files
  Run after = Generate(*b, Prompt());
  EXPECT_GE(after.result.cached_tokens, static_cast<int32_t>(Prompt().size()) - 1);
  EXPECT_EQ(after.result.cache_tier, "ssd");
  EXPECT_EQ(after.tokens, cold.tokens);  // bitwise the uncached answer
  const BackendStats s = b->Stats();
  EXPECT_EQ(Value(s, "ssd", "restores"), 1);
  EXPECT_EQ(Value(s, "ssd", "restore_chosen"), 1);
  EXPECT_GE(Value(s, "ssd", "tokens_served"), Prompt().size() - 1);
  // The restored entry is in RAM now: the next repeat is a RAM hit.
  Run again = Generate(*b, Prompt());
  EXPECT_EQ(again.result.cache_tier, "ram");
  EXPECT_EQ(again.tokens, cold.tokens);
}

TEST_F(EngineBackendSsdTest, CorruptTruncatedAndForeignFilesNeverChangeTheAnswer) {
  Run cold;
  {
    auto b = Backend();
    cold = Generate(*b, Prompt());
    std::vector<int32_t> other = Prompt();
    other[0] += 1;  // a second, unrelated entry
    Generate(*b, other);
    ASSERT_TRUE(b->FlushCache().ok());
  }
  std::vector<std::string> files = EntryFiles();
  ASSERT_GE(files.size(), 2u);
  // A foreign identity directory (another model) with a file the scan must not touch.
  const fs::path foreign = fs::path(root_) / "llama-0123456789abcdef" / "00" / "x.entry";
  fs::create_directories(foreign.parent_path());
  std::ofstream(foreign) << "not ours";
  // Flip a byte in the tensor data of every entry: the header verifies, the data checksum does not.
  for (const std::string& f : files) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(-5, std::ios::end);
    char c;
    io.get(c);
    io.seekp(-5, std::ios::end);
    io.put(static_cast<char>(c ^ 0x40));
  }
  {
    auto b = Backend();
    Run r = Generate(*b, Prompt());
    EXPECT_EQ(r.tokens, cold.tokens);  // answered, and correctly
    EXPECT_EQ(r.result.cached_tokens, 0);
    const BackendStats s = b->Stats();
    EXPECT_EQ(Value(s, "ssd", "restore_failures"), 1);
    ASSERT_TRUE(b->FlushCache().ok());
  }
  // A flipped header byte and a truncated file: both caught by the startup scan.
  files = EntryFiles();
  std::vector<std::string> ours;
  for (const std::string& f : files) {
    if (f.find("llama-0123456789abcdef") == std::string::npos) ours.push_back(f);
  }
  ASSERT_GE(ours.size(), 2u);
  {
    std::fstream io(ours[0], std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(60);
    io.put('\x7f');
  }
  fs::resize_file(ours[1], fs::file_size(ours[1]) / 2);
  auto b = Backend();
  EXPECT_EQ(Value(b->Stats(), "ssd", "corrupt_deleted"), 2);
  EXPECT_FALSE(fs::exists(ours[0]));
  EXPECT_FALSE(fs::exists(ours[1]));
  Run r = Generate(*b, Prompt());
  EXPECT_EQ(r.tokens, cold.tokens);
  EXPECT_TRUE(fs::exists(foreign));  // never touched
}

TEST_F(EngineBackendSsdTest, TwoWeightFilesOfOneArchitectureNeverShareEntries) {
  {
    auto b = Backend(7);
    Generate(*b, Prompt());
    ASSERT_TRUE(b->FlushCache().ok());
  }
  auto b8 = Backend(8);
  Run r = Generate(*b8, Prompt());
  EXPECT_EQ(r.result.cached_tokens, 0);
  EXPECT_EQ(Value(b8->Stats(), "ssd", "restores"), 0);
  ASSERT_TRUE(b8->FlushCache().ok());
  // Two identity directories, one per weight file, each with its own entries.
  int identities = 0;
  for (const auto& e : fs::directory_iterator(root_)) identities += e.is_directory();
  EXPECT_EQ(identities, 2);
  // The memoized weight fingerprints: one line per model file.
  std::ifstream memo(fs::path(root_) / "weights-fingerprints");
  int lines = 0;
  for (std::string l; std::getline(memo, l);) ++lines;
  EXPECT_EQ(lines, 2);
}

TEST_F(EngineBackendSsdTest, StatsExposeTheSsdTierAndFlushIsIdempotent) {
  auto b = Backend();
  Generate(*b, Prompt());
  ASSERT_TRUE(b->FlushCache().ok());
  ASSERT_TRUE(b->FlushCache().ok());
  const BackendStats s = b->Stats();
  ASSERT_EQ(s.cache_tiers.size(), 2u);
  EXPECT_EQ(s.cache_tiers[1].tier, "ssd");
  EXPECT_GE(Value(s, "ssd", "entries"), 1);
  EXPECT_GE(Value(s, "ssd", "spills"), 1);
  EXPECT_EQ(Value(s, "ssd", "cap"), 32.0 * (1ull << 30));
  EXPECT_EQ(Value(s, "ssd", "write_queue_bytes"), 0);
  ASSERT_EQ(s.cache_tiers[1].histograms.size(), 1u);
  EXPECT_EQ(s.cache_tiers[1].histograms[0].name, "restore_ms");
}

TEST_F(EngineBackendSsdTest, AnUnusableCacheDirectoryCostsTheSsdTierNotTheServer) {
  ServeOptions o;
  o.model_path = dir_->file("m7.gguf");
  o.ssd_cache_dir = dir_->file("m7.gguf") + "/not-a-directory";  // under a regular file: mkdir fails
  auto b = CreateEngineBackend(o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->Stats().cache_tiers.size(), 1u);  // RAM only
  Run r = Generate(**b, Prompt());
  EXPECT_EQ(r.result.prompt_tokens, static_cast<int32_t>(Prompt().size()));
  EXPECT_TRUE((*b)->FlushCache().ok());
}

TEST_F(EngineBackendSsdTest, CacheCommandListsInspectsVerifiesAndCollects) {
  {
    auto b = Backend();
    Generate(*b, Prompt());
    ASSERT_TRUE(b->FlushCache().ok());
  }
  const std::vector<std::string> files = EntryFiles();
  ASSERT_EQ(files.size(), 1u);
  const std::string bin = testing::EmberBinary() + " cache ";
  const std::string dir = " --dir " + testing::ShellQuote(root_);
  testing::CommandResult ls = testing::RunCommand(bin + "ls --json" + dir);
  ASSERT_EQ(ls.exit_code, 0);
  EXPECT_NE(ls.out.find("\"entries\": 1"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("weights_xxh3"), std::string::npos) << ls.out;  // identity.json is shown
  testing::CommandResult inspect = testing::RunCommand(bin + "inspect --json --verify " + testing::ShellQuote(files[0]));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
  EXPECT_NE(inspect.out.find("\"data\": \"ok\""), std::string::npos) << inspect.out;
  EXPECT_EQ(testing::RunCommand(bin + "verify" + dir + " > /dev/null").exit_code, 0);
  // A leftover temp file and a corrupted entry: verify fails, gc removes both.
  std::ofstream(fs::path(files[0]).parent_path() / "dead.tmp") << "half";
  {
    std::fstream io(files[0], std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(60);
    io.put('\x7f');
  }
  EXPECT_EQ(testing::RunCommand(bin + "verify" + dir + " > /dev/null").exit_code, 1);
  EXPECT_EQ(testing::RunCommand(bin + "gc" + dir + " > /dev/null").exit_code, 0);
  EXPECT_TRUE(EntryFiles().empty());
  EXPECT_FALSE(fs::exists(fs::path(files[0]).parent_path() / "dead.tmp"));
}

}  // namespace
}  // namespace ember::server
