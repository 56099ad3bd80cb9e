// engine/weight_pages.h: the placement decisions against a simulated page cache, the smaps parser, and
// the real calls on a real file (bytes unchanged across a drop and re-read; consistent counts).
#include "engine/weight_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "support/test_support.h"

namespace ember {
namespace {

// A page cache in 2 MiB chunks: each chunk is cached small, cached huge, or not cached. Populate maps
// what is cached and reads in what is not (huge when advised and the "kernel" can); Drop evicts.
class FakePageOps final : public PageOps {
 public:
  FakePageOps(const uint8_t* base, size_t chunks, bool kernel_can) : base_(base), kernel_can_(kernel_can) {
    state_.assign(chunks, State::kSmall);
    advised_.assign(chunks, false);
  }
  enum class State { kUncached, kSmall, kHuge };

  void AdviseHuge(const uint8_t* b, size_t n, bool huge) override {
    for (size_t c = First(b); c < End(b, n); ++c) advised_[c] = huge;
  }
  void Populate(const uint8_t* b, size_t n) override {
    ++populates_;
    populated_at_.push_back(b);
    for (size_t c = First(b); c < End(b, n); ++c) {
      if (state_[c] == State::kUncached) state_[c] = kernel_can_ && advised_[c] ? State::kHuge : State::kSmall;
    }
  }
  bool Drop(const uint8_t* b, size_t n) override {
    dropped_bytes_ += n;
    for (size_t c = First(b); c < End(b, n); ++c) state_[c] = State::kUncached;
    return true;
  }
  uint64_t HugeMappedBytes(std::span<const WeightRange> ranges) override {
    uint64_t t = 0;
    for (const WeightRange& r : ranges) {
      const size_t n = static_cast<size_t>(r.end - r.begin);
      for (size_t c = First(r.begin); c < End(r.begin, n); ++c) t += state_[c] == State::kHuge ? kHugePageBytes : 0;
    }
    return t;
  }

  std::vector<State> state_;
  std::vector<bool> advised_;                // per chunk: the last AdviseHuge covering it said huge
  std::vector<const uint8_t*> populated_at_;  // each Populate's start, in call order
  uint64_t dropped_bytes_ = 0;
  int populates_ = 0;

 private:
  size_t First(const uint8_t* b) const { return static_cast<size_t>(b - base_) / kHugePageBytes; }
  size_t End(const uint8_t* b, size_t n) const {
    return std::min(state_.size(), (static_cast<size_t>(b - base_) + n + kHugePageBytes - 1) / kHugePageBytes);
  }
  const uint8_t* base_;
  bool kernel_can_;
};

// A 2 MiB-aligned fake address space of `chunks` chunks (never dereferenced).
const uint8_t* FakeBase() { return reinterpret_cast<const uint8_t*>(uintptr_t{64} << 30); }

TEST(WeightPagesTest, SmallFoliosAreReReadOnceWhenTheProbeComesBackHuge) {
  FakePageOps ops(FakeBase(), 10, /*kernel_can=*/true);
  const WeightRange r{FakeBase(), FakeBase() + 10 * kHugePageBytes};
  const WeightPages p = PlaceWeights(ops, std::span(&r, 1), {});
  EXPECT_TRUE(p.reread);
  EXPECT_EQ(p.bytes, 10 * kHugePageBytes);
  EXPECT_EQ(p.huge_capable, 10 * kHugePageBytes);
  EXPECT_EQ(p.huge_bytes, 10 * kHugePageBytes);
  for (auto s : ops.state_) EXPECT_EQ(s, FakePageOps::State::kHuge);
  EXPECT_EQ(ops.dropped_bytes_, 11 * kHugePageBytes);  // the probe chunk, then everything
}

TEST(WeightPagesTest, AKernelThatCachesSmallFoliosCostsOnlyTheProbe) {
  FakePageOps ops(FakeBase(), 10, /*kernel_can=*/false);
  const WeightRange r{FakeBase(), FakeBase() + 10 * kHugePageBytes};
  const WeightPages p = PlaceWeights(ops, std::span(&r, 1), {});
  EXPECT_FALSE(p.reread);
  EXPECT_EQ(p.huge_bytes, 0u);
  EXPECT_EQ(ops.dropped_bytes_, kHugePageBytes);
}

TEST(WeightPagesTest, MostlyHugeAlreadyIsLeftAlone) {
  FakePageOps ops(FakeBase(), 10, /*kernel_can=*/true);
  for (size_t c = 0; c < 9; ++c) ops.state_[c] = FakePageOps::State::kHuge;
  const WeightRange r{FakeBase(), FakeBase() + 10 * kHugePageBytes};
  const WeightPages p = PlaceWeights(ops, std::span(&r, 1), {});
  EXPECT_FALSE(p.reread);
  EXPECT_EQ(p.huge_bytes, 9 * kHugePageBytes);
  EXPECT_EQ(ops.dropped_bytes_, 0u);
}

TEST(WeightPagesTest, AHugeProbeChunkStillProvesTheKernelCan) {
  FakePageOps ops(FakeBase(), 10, /*kernel_can=*/true);
  ops.state_[0] = FakePageOps::State::kHuge;  // the probe's chunk is huge already: dropping it loses 2 MiB first
  const WeightRange r{FakeBase(), FakeBase() + 10 * kHugePageBytes};
  EXPECT_TRUE(PlaceWeights(ops, std::span(&r, 1), {}).reread);
}

// Repacked matrices' sources (read once, then released): populated in address order with the rest, but
// never advised, dropped or counted; the re-read covers the kept ranges alone.
TEST(WeightPagesTest, ReadOnceRangesArePopulatedButNeitherAdvisedNorReRead) {
  FakePageOps ops(FakeBase(), 20, /*kernel_can=*/true);
  const uint8_t* b = FakeBase();
  const WeightRange kept[] = {{b, b + 4 * kHugePageBytes}, {b + 14 * kHugePageBytes, b + 20 * kHugePageBytes}};
  const WeightRange once{b + 4 * kHugePageBytes, b + 14 * kHugePageBytes};
  std::vector<uint64_t> totals;
  WeightPagesOptions o;
  o.read_once = std::span(&once, 1);
  o.progress = [&](uint64_t, uint64_t total) { totals.push_back(total); };
  const WeightPages p = PlaceWeights(ops, kept, o);
  EXPECT_TRUE(p.reread);
  EXPECT_EQ(p.bytes, 10 * kHugePageBytes);
  EXPECT_EQ(p.read_once, 10 * kHugePageBytes);
  EXPECT_EQ(p.huge_capable, 10 * kHugePageBytes);
  EXPECT_EQ(p.huge_bytes, 10 * kHugePageBytes);
  EXPECT_EQ(ops.dropped_bytes_, 11 * kHugePageBytes);  // the probe chunk, then the kept ranges only
  for (size_t c = 0; c < 20; ++c) {
    const bool read_once = c >= 4 && c < 14;
    EXPECT_EQ(ops.advised_[c], !read_once) << c;
    EXPECT_EQ(ops.state_[c], read_once ? FakePageOps::State::kSmall : FakePageOps::State::kHuge) << c;
  }
  // The first pass reads the three ranges in address order; its progress counts all 20 chunks.
  ASSERT_GE(ops.populated_at_.size(), 3u);
  EXPECT_EQ(ops.populated_at_[0], b);
  EXPECT_EQ(ops.populated_at_[1], once.begin);
  EXPECT_EQ(ops.populated_at_[2], kept[1].begin);
  ASSERT_FALSE(totals.empty());
  EXPECT_EQ(totals.front(), 20 * kHugePageBytes);
  EXPECT_EQ(totals.back(), 10 * kHugePageBytes);  // the re-read's own count
}

// A range with no whole aligned 2 MiB chunk is populated and counted but not advised (it cannot be
// mapped huge, and advising it would only split the mapping).
TEST(WeightPagesTest, RangesTooSmallForAHugePageAreNotAdvised) {
  FakePageOps ops(FakeBase(), 4, /*kernel_can=*/true);
  const WeightRange small{FakeBase() + 4096, FakeBase() + 8192};
  const WeightPages p = PlaceWeights(ops, std::span(&small, 1), {});
  EXPECT_EQ(p.bytes, 4096u);
  EXPECT_EQ(p.huge_capable, 0u);
  EXPECT_EQ(ops.populates_, 1);
  EXPECT_FALSE(ops.advised_[0]);
}

// Populating reports progress per piece of at most 64 MiB; pieces end on 2 MiB boundaries (none splits
// a huge page) and the last report is the whole.
TEST(WeightPagesTest, PopulatesInPiecesAndReportsProgress) {
  FakePageOps ops(FakeBase(), 100, true);
  const uint8_t* b = FakeBase() + 4096;  // a range that starts mid-chunk
  const WeightRange ranges[] = {{b, FakeBase() + 70 * kHugePageBytes + 123}, {FakeBase() + 80 * kHugePageBytes, FakeBase() + 81 * kHugePageBytes}};
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  WeightPagesOptions o;
  o.huge = false;
  o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  const WeightPages p = PlaceWeights(ops, ranges, o);
  ASSERT_EQ(calls.size(), 4u);  // 140 MiB in 3 pieces, then the second range in 1
  EXPECT_EQ(ops.populates_, 4);
  const uint64_t piece0 = 32 * kHugePageBytes - 4096;  // the first piece stops at the 2 MiB boundary
  EXPECT_EQ(calls[0].first, piece0);
  EXPECT_EQ(calls[1].first, piece0 + 32 * kHugePageBytes);
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i].first, calls[i - 1].first);
  for (const auto& c : calls) EXPECT_EQ(c.second, p.bytes);
  EXPECT_EQ(calls.back().first, p.bytes);
}

TEST(WeightPagesTest, OffOrNotPopulatingDropsNothing) {
  FakePageOps off(FakeBase(), 10, true), lazy(FakeBase(), 10, true);
  const WeightRange r{FakeBase(), FakeBase() + 10 * kHugePageBytes};
  const WeightPages a = PlaceWeights(off, std::span(&r, 1), {.populate = true, .huge = false, .progress = {}, .read_once = {}});
  EXPECT_EQ(a.huge_bytes, 0u);
  EXPECT_EQ(off.dropped_bytes_, 0u);
  EXPECT_EQ(off.populates_, 1);
  const WeightPages b = PlaceWeights(lazy, std::span(&r, 1), {.populate = false, .huge = true, .progress = {}, .read_once = {}});
  EXPECT_EQ(lazy.populates_, 0);
  EXPECT_EQ(lazy.dropped_bytes_, 0u);
  EXPECT_EQ(b.bytes, 10 * kHugePageBytes);
}

TEST(WeightPagesTest, OnlyWholeAlignedChunksCountAsCapable) {
  FakePageOps ops(FakeBase(), 4, /*kernel_can=*/false);
  // [0.5 MiB, 3.5 MiB) holds no whole aligned chunk ([2, 4) MiB is cut at 3.5).
  const WeightRange r{FakeBase() + kHugePageBytes / 4, FakeBase() + 7 * kHugePageBytes / 4};
  EXPECT_EQ(PlaceWeights(ops, std::span(&r, 1), {}).huge_capable, 0u);
  const WeightRange two[] = {{FakeBase(), FakeBase() + kHugePageBytes + 5},
                             {FakeBase() + 2 * kHugePageBytes - 3, FakeBase() + 4 * kHugePageBytes}};
  EXPECT_EQ(PlaceWeights(ops, two, {}).huge_capable, 3 * kHugePageBytes);
}

TEST(WeightPagesTest, SmapsParserSumsOverlappingVmasOnly) {
  const std::string smaps =
      "7f0000000000-7f0000400000 r--s 00000000 fe:00 12 /m/a.gguf\n"
      "Size:               4096 kB\n"
      "FilePmdMapped:      4096 kB\n"
      "7f0000400000-7f0000a00000 r--s 00400000 fe:00 12 /m/a.gguf\n"
      "FilePmdMapped:      2048 kB\n"
      "VmFlags: rd sh mr mw me ms hg\n"
      "7f0000a00000-7f0000c00000 r--s 00a00000 fe:00 12 /m/a.gguf\n"
      "FilePmdMapped:   garbage kB\n"
      "FilePmdMapped:      2048 MB\n"
      "7f1000000000-7f1000200000 r--s 00000000 fe:00 13 /m/b.gguf\n"
      "FilePmdMapped:      2048 kB\n";
  EXPECT_EQ(FilePmdMappedBytes(smaps, 0x7f0000400000, 0x7f0000a00000), 2048u * 1024);
  EXPECT_EQ(FilePmdMappedBytes(smaps, 0x7f0000000000, 0x7f0000c00000), 6144u * 1024);  // malformed lines skipped
  EXPECT_EQ(FilePmdMappedBytes(smaps, 0x7f00003ff000, 0x7f0000400001), 6144u * 1024);  // touches both
  EXPECT_EQ(FilePmdMappedBytes(smaps, 0x7f2000000000, 0x7f3000000000), 0u);
  EXPECT_EQ(FilePmdMappedBytes("", 0, ~uintptr_t{0}), 0u);
}

// The real calls: a 24 MiB file written 4 KiB at a time (its page cache in small folios), placed, then
// read back. Dropping and re-reading must never change a byte, the counts must be consistent, and on a
// kernel whose page cache does give 2 MiB folios (the probe says so) the whole capable range is huge.
TEST(WeightPagesTest, RealFileBytesSurviveAndCountsAreConsistent) {
  testing::TempDir dir;
  const std::string path = dir.file("w.bin");
  const size_t n = size_t{24} << 20;
  std::vector<uint8_t> want(n);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&want[i], &v, 8);
  }
  {
    std::ofstream out(path, std::ios::binary);
    for (size_t i = 0; i < n; i += 4096) out.write(reinterpret_cast<const char*>(&want[i]), 4096);
  }
  auto region = Env::Default()->MapFile(path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  const MappedRegion& m = **region;
  ASSERT_EQ(m.size(), n);
  SystemPageOps ops(m);
  const WeightRange r{m.data() + 4096, m.data() + n};
  const WeightPages p = PlaceWeights(ops, std::span(&r, 1), {});
  RecordProperty("reread", p.reread ? "yes" : "no");
  RecordProperty("huge_bytes", std::to_string(p.huge_bytes));
  EXPECT_EQ(p.bytes, n - 4096);
  EXPECT_GE(p.huge_capable, n - 2 * kHugePageBytes);
  EXPECT_LE(p.huge_bytes, p.huge_capable + 2 * kHugePageBytes);  // whole VMAs are counted
  if (p.reread) {
    EXPECT_GE(p.huge_bytes * 10, p.huge_capable * 9) << "a re-read that helped must leave them huge";
  }
  EXPECT_EQ(std::memcmp(m.data(), want.data(), n), 0) << "placement changed the mapped bytes";
  // A second placement finds the cache as the first left it: no second re-read.
  const WeightPages again = PlaceWeights(ops, std::span(&r, 1), {});
  EXPECT_FALSE(again.reread && p.reread);
  EXPECT_EQ(std::memcmp(m.data(), want.data(), n), 0);
}

}  // namespace
}  // namespace ember
