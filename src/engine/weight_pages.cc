#include "engine/weight_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ember {
namespace {

uintptr_t PageSize() {
  static const uintptr_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uintptr_t>(p) : uintptr_t{4096};
  }();
  return page;
}

// [b, b + n) widened to whole pages (madvise wants a page-aligned start).
void PageSpan(const uint8_t* b, size_t n, void** start, size_t* len) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(b) & ~(PageSize() - 1);
  *start = reinterpret_cast<void*>(lo);
  *len = reinterpret_cast<uintptr_t>(b) + n - lo;
}

// The whole 2 MiB-aligned chunks inside [r.begin, r.end): what can be mapped with 2 MiB pages.
WeightRange HugeInner(const WeightRange& r) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(r.begin), e = reinterpret_cast<uintptr_t>(r.end);
  const uintptr_t lo = (b + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  const uintptr_t hi = e & ~(uintptr_t{kHugePageBytes} - 1);
  if (hi <= lo) return {};
  return {reinterpret_cast<const uint8_t*>(lo), reinterpret_cast<const uint8_t*>(hi)};
}

size_t Size(const WeightRange& r) { return static_cast<size_t>(r.end - r.begin); }

bool ParseHex(std::string_view s, uintptr_t* v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

// Populates every range in pieces of at most 64 MiB that end on 2 MiB boundaries (a piece never splits
// a huge page), reporting the bytes done after each.
void PopulateAll(PageOps& ops, std::span<const WeightRange> ranges, uint64_t total, const ProgressFn& progress) {
  constexpr uintptr_t kPiece = uintptr_t{64} << 20;
  uint64_t done = 0;
  for (const WeightRange& r : ranges) {
    const uint8_t* p = r.begin;
    while (p < r.end) {
      const uintptr_t cut = (reinterpret_cast<uintptr_t>(p) + kPiece) & ~(uintptr_t{kHugePageBytes} - 1);
      const uint8_t* q = cut >= reinterpret_cast<uintptr_t>(r.end) ? r.end : reinterpret_cast<const uint8_t*>(cut);
      ops.Populate(p, static_cast<size_t>(q - p));
      done += static_cast<uint64_t>(q - p);
      p = q;
      if (progress) progress(std::min(done, total), total);
    }
  }
}

}  // namespace

void SystemPageOps::AdviseHuge(const uint8_t* b, size_t n, bool huge) {
  void* start;
  size_t len;
  PageSpan(b, n, &start, &len);
  (void)madvise(start, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);  // EINVAL without THP: no change
}

void SystemPageOps::Populate(const uint8_t* b, size_t n) {
  void* start;
  size_t len;
  PageSpan(b, n, &start, &len);
#ifdef MADV_POPULATE_READ
  if (madvise(start, len, MADV_POPULATE_READ) == 0) return;
#endif
  (void)madvise(start, len, MADV_WILLNEED);  // older kernels: read-ahead only
}

bool SystemPageOps::Drop(const uint8_t* b, size_t n) {
  if (b < region_.data() || b + n > region_.data() + region_.size()) return false;
  return region_.DropCachedPages(static_cast<size_t>(b - region_.data()), n);
}

uint64_t SystemPageOps::HugeMappedBytes(std::span<const WeightRange> ranges) {
  // /proc is a machine fact, read directly (docs/conventions.md "Files go through the Env").
  std::ifstream in("/proc/self/smaps");
  if (!in) return 0;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t total = 0;
  for (const WeightRange& r : ranges) {
    total += FilePmdMappedBytes(text, reinterpret_cast<uintptr_t>(r.begin), reinterpret_cast<uintptr_t>(r.end));
  }
  return total;
}

uint64_t FilePmdMappedBytes(std::string_view smaps, uintptr_t lo, uintptr_t hi) {
  uint64_t total = 0;
  bool inside = false;  // the current VMA overlaps [lo, hi)
  while (!smaps.empty()) {
    const size_t nl = smaps.find('\n');
    const std::string_view line = smaps.substr(0, nl);
    smaps = nl == std::string_view::npos ? std::string_view() : smaps.substr(nl + 1);
    const size_t dash = line.find('-'), space = line.find(' ');
    uintptr_t start = 0, end = 0;
    if (dash != std::string_view::npos && space != std::string_view::npos && dash < space &&
        ParseHex(line.substr(0, dash), &start) && ParseHex(line.substr(dash + 1, space - dash - 1), &end)) {
      inside = start < hi && end > lo;  // a VMA header: "start-end perms offset dev inode path"
      continue;
    }
    constexpr std::string_view kKey = "FilePmdMapped:";
    if (!inside || !line.starts_with(kKey)) continue;
    std::string_view v = line.substr(kKey.size());
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    uint64_t kb = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), kb);
    if (ec == std::errc() && std::string_view(p, static_cast<size_t>(v.data() + v.size() - p)) == " kB" &&
        kb < (uint64_t{1} << 44)) {
      total += kb * 1024;
    }
  }
  return total;
}

WeightPages PlaceWeights(PageOps& ops, std::span<const WeightRange> ranges, const WeightPagesOptions& options) {
  WeightPages out;
  std::vector<WeightRange> capable;  // the ranges that can hold a 2 MiB page: advised and measured
  for (const WeightRange& r : ranges) {
    if (r.end <= r.begin) continue;
    out.bytes += Size(r);
    const size_t inner = Size(HugeInner(r));
    if (inner == 0) continue;
    out.huge_capable += inner;
    capable.push_back(r);
    ops.AdviseHuge(r.begin, Size(r), options.huge);
  }
  // Everything to populate, in address order (one sequential read of the file when it is cold).
  std::vector<WeightRange> all(ranges.begin(), ranges.end());
  for (const WeightRange& r : options.read_once) {
    if (r.end > r.begin) out.read_once += Size(r);
    all.push_back(r);
  }
  std::sort(all.begin(), all.end(), [](const WeightRange& a, const WeightRange& b) { return a.begin < b.begin; });
  std::erase_if(all, [](const WeightRange& r) { return r.end <= r.begin; });
  if (!options.populate) return out;
  PopulateAll(ops, all, out.bytes + out.read_once, options.progress);
  if (!options.huge || out.huge_capable == 0) return out;
  ranges = capable;  // from here on: the advised ranges alone
  out.huge_bytes = ops.HugeMappedBytes(ranges);
  if (out.huge_bytes * 10 >= out.huge_capable * 9) return out;
  // Probe: does a re-read of one chunk come back huge? Counted across its own drop, so a chunk that
  // was huge already proves it as well as one that was not.
  WeightRange probe;
  for (const WeightRange& r : ranges) {
    const WeightRange inner = HugeInner(r);
    if (inner.end > inner.begin) {
      probe = {inner.begin, inner.begin + kHugePageBytes};
      break;
    }
  }
  if (!ops.Drop(probe.begin, kHugePageBytes)) return out;
  const uint64_t dropped = ops.HugeMappedBytes(ranges);
  ops.Populate(probe.begin, kHugePageBytes);
  const uint64_t refilled = ops.HugeMappedBytes(ranges);
  if (refilled < dropped + kHugePageBytes) {
    out.huge_bytes = refilled;
    return out;  // this kernel or file system caches the file in small folios: re-reading cannot help
  }
  uint64_t again = 0;
  for (const WeightRange& r : ranges) {
    (void)ops.Drop(r.begin, Size(r));
    again += Size(r);
  }
  PopulateAll(ops, ranges, again, options.progress);
  out.reread = true;
  out.huge_bytes = ops.HugeMappedBytes(ranges);
  return out;
}

}  // namespace ember
