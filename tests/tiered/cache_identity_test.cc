// The weights-fingerprint memo under the cache root is untrusted bytes: damaged, truncated, hostile or
// oversized, it is ignored (the hash recomputed) and healed on rewrite; nothing in it throws.
#include "tiered/cache_identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "format/gguf.h"
#include "support/test_support.h"
#include "util/hex.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

class CacheIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/ember_cache_identity_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    model_ = new std::string(*dir_ + "/m.gguf");
    const std::string cmd = std::string(EMBER_BINARY_DIR) + "/ember gen-model --out '" + *model_ +
                            "' --n-layer 1 --n-embd 32 --n-head 2 --n-head-kv 2 --n-ff 64 --type f32 > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete model_;
  }
  void SetUp() override {
    root_ = *dir_ + "/root-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(root_);
    auto g = GgufFile::Open(*model_);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    gguf_ = std::move(g).value();
    truth_ = HashWeights(*gguf_);
  }
  // The memo line a well-behaved ember writes for the model, with `hash_field` as the hash.
  std::string KeyPrefix() {
    Env& env = *PosixEnv::Default();
    return std::to_string(*env.FileSize(*model_)) + " " + std::to_string(*env.GetMtimeMicros(*model_)) + " ";
  }
  std::string Line(const std::string& hash_field) { return KeyPrefix() + hash_field + " " + *model_ + "\n"; }
  void WriteMemo(const std::string& bytes) { std::ofstream(root_ + "/weights-fingerprints", std::ios::binary) << bytes; }
  std::string ReadMemo() {
    std::ifstream in(root_ + "/weights-fingerprints", std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  uint64_t Fingerprint() { return WeightsFingerprint(*PosixEnv::Default(), root_, *model_, *gguf_); }

  static std::string* dir_;
  static std::string* model_;
  std::string root_;
  std::unique_ptr<GgufFile> gguf_;
  uint64_t truth_ = 0;
};
std::string* CacheIdentityTest::dir_ = nullptr;
std::string* CacheIdentityTest::model_ = nullptr;

TEST_F(CacheIdentityTest, AWellFormedMemoIsUsedAndWrittenPrivately) {
  EXPECT_EQ(Fingerprint(), truth_);
  EXPECT_EQ(ReadMemo(), Line(Hex64(truth_)));
  EXPECT_EQ(fs::status(root_ + "/weights-fingerprints").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  // A memo line for this exact (path, size, mtime) is believed: that is what makes later starts free.
  WriteMemo(Line("00000000000000ab"));
  EXPECT_EQ(Fingerprint(), 0xabu);
}

TEST_F(CacheIdentityTest, CorruptMemoBytesAreIgnoredRecomputedAndHealedNeverThrown) {
  const std::string garbage[] = {
      Line("zzzzzzzzzzzzzzzz"),                    // 16 characters, not hex: std::stoull used to throw here
      Line("-000000000000001"),                    // a sign
      Line("0x00000000000001"),                    // a prefix
      Line("000000000000000"),                     // 15 digits
      "99999999999999999999999 1 0123456789abcdef " + *model_ + "\n",  // size out of range
      KeyPrefix() + "0123456789abcdef",            // truncated: no path
      std::string("\x00\xff\x01 \n\n \t\r\n", 9),  // binary
      std::string(2 << 20, 'x') + "\n" + Line("00000000000000ab"),  // over the size cap: not even read
  };
  for (const std::string& memo : garbage) {
    WriteMemo(memo);
    uint64_t got = 0;
    EXPECT_NO_THROW(got = Fingerprint()) << memo.substr(0, 80);
    EXPECT_EQ(got, truth_) << memo.substr(0, 80);
    EXPECT_EQ(ReadMemo(), Line(Hex64(truth_))) << "the bad lines are dropped when the memo is rewritten";
  }
  // Another model's well-formed line survives a rewrite; a damaged one next to it does not.
  WriteMemo("12 34 00000000000000cd /elsewhere/other.gguf\n" + Line("not-a-hash-at-all"));
  EXPECT_EQ(Fingerprint(), truth_);
  EXPECT_EQ(ReadMemo(), "12 34 00000000000000cd /elsewhere/other.gguf\n" + Line(Hex64(truth_)));
}

TEST_F(CacheIdentityTest, AMemoThatIsADirectoryOrALinkIsIgnored) {
  fs::create_directories(root_ + "/weights-fingerprints");
  EXPECT_EQ(Fingerprint(), truth_);
  fs::remove_all(root_ + "/weights-fingerprints");
  { std::ofstream(*dir_ + "/planted") << Line("00000000000000ab"); }
  fs::create_symlink(*dir_ + "/planted", root_ + "/weights-fingerprints");
  EXPECT_EQ(Fingerprint(), truth_);  // not read through the link
  std::ifstream planted(*dir_ + "/planted");
  std::string kept((std::istreambuf_iterator<char>(planted)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, Line("00000000000000ab"));  // and not written through it (the rename replaced the link)
  for (const auto& e : fs::directory_iterator(root_)) EXPECT_FALSE(e.path().string().ends_with(".tmp")) << e.path();
}

TEST_F(CacheIdentityTest, AMemoThatIsAFifoIsIgnoredNotWaitedOn) {
  ::alarm(30);  // opening a FIFO without a writer used to block forever: a hang fails the binary
  ASSERT_EQ(::mkfifo((root_ + "/weights-fingerprints").c_str(), 0600), 0);
  EXPECT_EQ(Fingerprint(), truth_);
  EXPECT_EQ(ReadMemo(), Line(Hex64(truth_)));  // replaced by a real memo (the rename replaces the FIFO)
  ::alarm(0);
}

TEST_F(CacheIdentityTest, AModelReachedThroughALinkIsMemoizedUnderItsTarget) {
  // Hub snapshots link `model.gguf -> ../blobs/<sha>`. The Env never follows a link, so the memo key is
  // the target's path, size and mtime; before, the link could not be sized and every start re-hashed.
  const std::string link = *dir_ + "/linked.gguf";
  fs::remove(link);
  fs::create_symlink(*model_, link);
  const std::string target = fs::canonical(*model_).string();
  WriteMemo(KeyPrefix() + "00000000000000ab " + target + "\n");
  EXPECT_EQ(WeightsFingerprint(*PosixEnv::Default(), root_, link, *gguf_), 0xabu);
  fs::remove(root_ + "/weights-fingerprints");
  EXPECT_EQ(WeightsFingerprint(*PosixEnv::Default(), root_, link, *gguf_), truth_);
  EXPECT_EQ(ReadMemo(), KeyPrefix() + Hex64(truth_) + " " + target + "\n");
}

TEST_F(CacheIdentityTest, HashingReportsProgressAndAMemoHitDoesNot) {
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  const ProgressFn progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  EXPECT_EQ(WeightsFingerprint(*PosixEnv::Default(), root_, *model_, *gguf_, progress), truth_);
  uint64_t total = 0;
  for (const GgufTensorInfo& t : gguf_->tensors()) total += t.n_bytes;
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), std::make_pair(total, total));
  calls.clear();
  EXPECT_EQ(WeightsFingerprint(*PosixEnv::Default(), root_, *model_, *gguf_, progress), truth_);
  EXPECT_TRUE(calls.empty()) << "the memo answered: nothing was hashed";
}

// A tensor larger than the 64 MiB progress piece is fed to XXH3 in pieces; the digest must equal one
// update over the same bytes (the format of HashWeights, written out here byte by byte).
TEST(HashWeights, PiecesHashLikeOneUpdateOverTheSameBytes) {
  testing::TempDir dir;
  const std::string model = dir.file("big.gguf");
  // Qwen3's 151,936-token table at 128 f32 columns: 78 MB, more than one piece.
  const std::string cmd = std::string(EMBER_BINARY_DIR) + "/ember gen-model --out '" + model +
                          "' --arch qwen3 --tokenizer qwen3 --n-layer 1 --n-embd 128 --n-head 2 --n-head-kv 2 "
                          "--n-ff 128 --type f32 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto g = GgufFile::Open(model);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::string stream;
  auto u64 = [&](uint64_t v) { stream.append(reinterpret_cast<const char*>(&v), sizeof v); };
  uint64_t largest = 0;
  for (const GgufTensorInfo& t : (*g)->tensors()) {
    u64(t.name.size());
    stream += t.name;
    u64(static_cast<uint64_t>(t.type));
    for (uint64_t d : t.ne) u64(d);
    u64(t.n_bytes);
    stream.append(reinterpret_cast<const char*>(t.data), t.n_bytes);
    largest = std::max(largest, t.n_bytes);
  }
  ASSERT_GT(largest, uint64_t{64} << 20) << "the test needs a tensor split into pieces";
  int calls = 0;
  EXPECT_EQ(HashWeights(**g, [&](uint64_t, uint64_t) { ++calls; }), XXH3_64bits(stream.data(), stream.size()));
  EXPECT_GE(calls, 2);
  EXPECT_EQ(HashWeights(**g), XXH3_64bits(stream.data(), stream.size()));
}

}  // namespace
}  // namespace ember
