// Streaming entry writes and restores (coldtier/tensor_stream.h behind entry_file.h): every file append
// and read is bounded by one stream buffer (not the entry), large and odd-sized states round-trip
// through both the buffered and the direct paths, and the streamed checksums equal XXH3's one-shot ones.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <random>

#include "coldtier/entry_file.h"
#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "coldtier/tensor_stream.h"
#include "test_state.h"
#include "util/env_wrapper.h"

namespace ember {
namespace {

using coldtier_test::Bytes;
using coldtier_test::MakeState;
using coldtier_test::Tokens;

constexpr const char* kDir = "/cold/id/ns";
constexpr const char* kPath = "/cold/id/ns/e.entry";

// Records the largest single append and read, and can fail reads past a file offset.
class RecordingEnv final : public EnvWrapper {
 public:
  using EnvWrapper::EnvWrapper;
  size_t max_append = 0, max_read = 0;
  uint64_t fail_reads_from = UINT64_MAX;

  class File final : public WritableFile {
   public:
    File(std::unique_ptr<WritableFile> f, RecordingEnv* env) : f_(std::move(f)), env_(env) {}
    Status Append(const void* d, size_t n) override {
      env_->max_append = std::max(env_->max_append, n);
      return f_->Append(d, n);
    }
    Status Sync() override { return f_->Sync(); }
    Status Close() override { return f_->Close(); }

   private:
    std::unique_ptr<WritableFile> f_;
    RecordingEnv* env_;
  };
  class Reader final : public RandomAccessFile {
   public:
    Reader(std::unique_ptr<RandomAccessFile> f, RecordingEnv* env) : f_(std::move(f)), env_(env) {}
    Status Read(uint64_t offset, size_t n, void* out) override {
      env_->max_read = std::max(env_->max_read, n);
      if (offset + n > env_->fail_reads_from) return IoError("read: injected EIO");
      return f_->Read(offset, n, out);
    }

   private:
    std::unique_ptr<RandomAccessFile> f_;
    RecordingEnv* env_;
  };

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    EMBER_ASSIGN_OR_RETURN(auto f, target()->NewWritableFile(path));
    return std::unique_ptr<WritableFile>(new File(std::move(f), this));
  }
  Status ReadRange(const std::string& path, uint64_t offset, size_t n, void* out) override {
    max_read = std::max(max_read, n);
    if (offset + n > fail_reads_from) return IoError("read: injected EIO");
    return target()->ReadRange(path, offset, n, out);
  }
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    EMBER_ASSIGN_OR_RETURN(auto f, target()->NewRandomAccessFile(path));
    return std::unique_ptr<RandomAccessFile>(new Reader(std::move(f), this));
  }
};

// 2 KiB per position in 32 KiB blocks: small appends that FileSink gathers.
KvConfig SmallBlocks() { return KvConfig::Uniform(2, 4, 64, 64, KvDtype::kF16, 16); }
// 2 MiB blocks: appended whole (the state's own memory), read in stream-buffer pieces.
KvConfig BigBlocks() { return KvConfig::Uniform(2, 8, 128, 128, KvDtype::kF16, 256); }

class EntryStreamTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fault_.CreateDirs(kDir).ok()); }
  FaultInjectionEnv fault_;
  RecordingEnv env_{&fault_};
};

// Before streaming, the whole serialized state was one append and one read: 6 MiB here.
TEST_F(EntryStreamTest, WriteAndRestoreMoveAtMostOneStreamBufferAtATime) {
  KvState s = MakeState(3001, 1, SmallBlocks());
  ASSERT_GT(s.bytes(), 4 * kStreamBuffer);
  auto size = WriteEntry(env_, kDir, "e", {"id", "", Tokens(3001), &s});
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_LE(env_.max_append, kStreamBuffer);
  auto e = ReadEntry(env_, kPath, true);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_LE(env_.max_read, kStreamBuffer);
  EXPECT_EQ(Bytes(e->state), Bytes(s));
}

TEST_F(EntryStreamTest, BigBlocksRoundTripThroughDirectAndBufferedReads) {
  KvState s = MakeState(700, 2, BigBlocks());  // 2 full 2 MiB blocks, then a partial one
  ASSERT_TRUE(WriteEntry(env_, kDir, "e", {"id", "", Tokens(700), &s}).ok());
  EXPECT_LE(env_.max_append, BigBlocks().block_bytes());
  for (bool verify : {true, false}) {
    env_.max_read = 0;
    auto e = ReadEntry(env_, kPath, verify);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_LE(env_.max_read, kStreamBuffer);
    EXPECT_EQ(Bytes(e->state), Bytes(s));
  }
}

// The header's checksums (streamed on write) equal one-shot XXH3 of each chunk of the file's tensor.
TEST_F(EntryStreamTest, StoredChecksumsAreXxh3OfEachChunk) {
  KvState s = MakeState(1500, 3, SmallBlocks());
  ASSERT_TRUE(WriteEntry(env_, kDir, "e", {"id", "", Tokens(1500), &s}).ok());
  auto h = ReadHeader(env_, kPath);
  ASSERT_TRUE(h.ok());
  const TensorRef& t = h->tensors[0];
  std::vector<uint8_t> file = *fault_.ReadFile(kPath);
  ASSERT_EQ(t.chunk_size, kEntryChunk);
  ASSERT_EQ(t.chunk_checksums.size(), (t.size + kEntryChunk - 1) / kEntryChunk);
  ASSERT_GE(t.chunk_checksums.size(), 2u);
  for (size_t i = 0; i < t.chunk_checksums.size(); ++i) {
    const uint64_t off = t.offset + i * kEntryChunk;
    EXPECT_EQ(t.chunk_checksums[i], XXH3_64bits(file.data() + off, std::min<uint64_t>(kEntryChunk, t.size - i * kEntryChunk)));
  }
}

// A flip in the last chunk is found although the deserializer has what it needs before reaching it.
TEST_F(EntryStreamTest, FlipInTheLastChunkIsCaught) {
  KvState s = MakeState(1500, 4, SmallBlocks());
  ASSERT_TRUE(WriteEntry(env_, kDir, "e", {"id", "", Tokens(1500), &s}).ok());
  const EntryHeader h = *ReadHeader(env_, kPath);
  ASSERT_TRUE(fault_.FlipByte(kPath, h.file_size - 1).ok());
  auto e = ReadEntry(env_, kPath, true);
  EXPECT_EQ(e.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(e.status().message().find("checksum mismatch"), std::string::npos) << e.status().ToString();
  EXPECT_TRUE(ReadEntry(env_, kPath, false).ok());  // unverified: the flipped value is just data
}

// Damage the deserializer trips on (the stream's magic) is still reported as a checksum mismatch when
// verifying, as when the whole tensor was checksummed before deserializing; unverified, it names it.
TEST_F(EntryStreamTest, ChecksumMismatchOutranksTheDeserializersError) {
  KvState s = MakeState(100, 5, SmallBlocks());
  ASSERT_TRUE(WriteEntry(env_, kDir, "e", {"id", "", Tokens(100), &s}).ok());
  ASSERT_TRUE(fault_.FlipByte(kPath, ReadHeader(env_, kPath)->data_offset).ok());
  auto verified = ReadEntry(env_, kPath, true);
  EXPECT_EQ(verified.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(verified.status().message().find("checksum mismatch"), std::string::npos) << verified.status().ToString();
  auto unverified = ReadEntry(env_, kPath, false);
  EXPECT_EQ(unverified.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(unverified.status().message().find("bad magic"), std::string::npos) << unverified.status().ToString();
}

// An EIO in the middle of the tensor keeps its code (a restore failure is not a corrupt file).
TEST_F(EntryStreamTest, ReadErrorMidStreamKeepsIoCode) {
  KvState s = MakeState(3001, 6, SmallBlocks());
  ASSERT_TRUE(WriteEntry(env_, kDir, "e", {"id", "", Tokens(3001), &s}).ok());
  env_.fail_reads_from = ReadHeader(env_, kPath)->data_offset + 3 * kStreamBuffer;
  for (bool verify : {true, false}) {
    auto e = ReadEntry(env_, kPath, verify);
    EXPECT_EQ(e.status().code(), StatusCode::kIoError) << e.status().ToString();
  }
}

TEST(ChunkHasherTest, PiecesOfAnySizeGiveOneShotChecksums) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(3 * 1000 + 17);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (uint64_t chunk : {uint64_t{1}, uint64_t{7}, uint64_t{1000}, uint64_t{5000}}) {
    ChunkHasher h(chunk);
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, rng() % 300);
      h.Update(data.data() + at, n);
      at += n;
    }
    std::vector<uint64_t> want;
    for (uint64_t off = 0; off < data.size(); off += chunk) {
      want.push_back(XXH3_64bits(data.data() + off, std::min<uint64_t>(chunk, data.size() - off)));
    }
    EXPECT_EQ(h.Finish(), want) << chunk;
    EXPECT_EQ(h.bytes(), data.size());
  }
}

TEST(TensorSourceTest, RefusesToReadPastTheTensor) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  env.PutDurableFile("/d/f", std::vector<uint8_t>(100, 1));
  auto file = env.NewRandomAccessFile("/d/f");
  ASSERT_TRUE(file.ok());
  TensorSource src(**file, 10, 50, 16, true);
  uint8_t buf[64];
  ASSERT_TRUE(src.Read(buf, 20).ok());
  EXPECT_EQ(src.remaining(), 30u);
  EXPECT_EQ(src.Read(buf, 31).code(), StatusCode::kCorrupt);
  EXPECT_TRUE(src.read_error().ok());  // a bounds refusal is not a read failure
  std::vector<uint64_t> want;
  for (int i = 0; i < 4; ++i) want.push_back(XXH3_64bits(std::vector<uint8_t>(i < 3 ? 16 : 2, 1).data(), i < 3 ? 16 : 2));
  EXPECT_EQ(*src.VerifyRest(want), true);
}

}  // namespace
}  // namespace ember
