// Where the mapped weights' pages sit, decided once at load: populated (so the first forward pass takes
// no page faults) and, where the kernel can, mapped with 2 MiB pages of the page cache.
//
// Why 2 MiB pages: decode streams every weight once per token, and with 4 KiB pages each 4 KiB costs a
// TLB miss (a two-level page walk under a hypervisor) and restarts the hardware prefetcher, which
// stops at page boundaries. On the 2-vCPU Xeon VM a one-thread matvec over the 0.6 B models read
// 7.5-8.8 GB/s from 4 KiB pages and 11-12.8 GB/s from 2 MiB pages (docs/engine.md "Weight pages").
//
// How: the weights stay in the shared file mapping (no copy). MADV_HUGEPAGE on their range makes the
// page cache read them in 2 MiB folios, which the fault path then maps with one PMD entry each (Linux
// with large-folio page cache support for the file system, e.g. ext4 or xfs on 6.x). A file whose
// pages are already cached in small folios (just written, or read in small pieces) stays on 4 KiB
// pages; then, if a probe of one 2 MiB chunk shows that a re-read gives a huge mapping, the weights'
// cached pages are dropped and read again once (later loads find them in 2 MiB folios). Pages another
// process maps are never dropped, so they stay as they are.
//
// Thread-safety: PlaceWeights runs at load on one thread; it only advises the kernel about pages, so
// nothing it does changes a byte the model reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "util/env.h"
#include "util/progress.h"

namespace ember {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

struct WeightRange {
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
};

// The OS calls PlaceWeights makes (a seam: its decisions are unit-tested with a fake). Ranges are
// byte ranges of the mapping; implementations round them to pages as the call needs.
class PageOps {
 public:
  virtual ~PageOps() = default;
  virtual void AdviseHuge(const uint8_t* b, size_t n, bool huge) = 0;  // MADV_HUGEPAGE / NOHUGEPAGE
  virtual void Populate(const uint8_t* b, size_t n) = 0;    // MADV_POPULATE_READ (WILLNEED if absent)
  virtual bool Drop(const uint8_t* b, size_t n) = 0;        // MappedRegion::DropCachedPages
  // Bytes mapped with 2 MiB pages in each range's mappings (whole VMAs that overlap it), summed over
  // the ranges.
  virtual uint64_t HugeMappedBytes(std::span<const WeightRange> ranges) = 0;
};

// The real calls on `region` (the file mapping the weights lie in). HugeMappedBytes reads
// /proc/self/smaps once per call (FilePmdMapped of the overlapping VMAs).
class SystemPageOps final : public PageOps {
 public:
  explicit SystemPageOps(const MappedRegion& region) : region_(region) {}
  void AdviseHuge(const uint8_t* b, size_t n, bool huge) override;
  void Populate(const uint8_t* b, size_t n) override;
  bool Drop(const uint8_t* b, size_t n) override;
  uint64_t HugeMappedBytes(std::span<const WeightRange> ranges) override;

 private:
  const MappedRegion& region_;
};

struct WeightPagesOptions {
  bool populate = true;  // map every page now
  // MADV_HUGEPAGE, and the one-time re-read when the cache holds small folios. Off: MADV_NOHUGEPAGE,
  // so even a cache of 2 MiB folios is mapped with 4 KiB pages (an A/B switch for benchmarks).
  bool huge = true;
  // Bytes populated so far of the total, per 64 MiB piece (a cold read from disk is most of a load).
  // Optional.
  ProgressFn progress;
  // Ranges read once and then released: the sources of repacked matrices (engine.cc), which the process
  // stops mapping once their copies exist. They are populated with the ranges, in address order (for
  // the progress, and so the packing reads mapped pages), but not advised, counted, probed or re-read:
  // 2 MiB pages for them would be work thrown away. Sorted, disjoint from the ranges.
  std::span<const WeightRange> read_once;
};

// What PlaceWeights did, for `ember bench` / logs.
struct WeightPages {
  uint64_t bytes = 0;          // bytes of the ranges (not the read-once ones)
  uint64_t read_once = 0;      // bytes of the read-once ranges, populated only
  uint64_t huge_capable = 0;   // of them, in whole 2 MiB-aligned chunks (what can be huge at all)
  uint64_t huge_bytes = 0;     // mapped with 2 MiB pages after placement (smaps' count of the VMAs)
  bool reread = false;         // the cached small folios were dropped and the weights read again
};

// Advises, populates and (options.huge) re-caches `ranges` as described above. Re-reading happens only
// when under 90% of the huge-capable bytes came out huge and a 2 MiB probe chunk did after a re-read.
// Only ranges with a whole 2 MiB-aligned chunk inside are advised and measured (a smaller one cannot be
// mapped huge, and leaving it alone keeps the mapping's VMAs few). `ranges` must be sorted and disjoint.
WeightPages PlaceWeights(PageOps& ops, std::span<const WeightRange> ranges, const WeightPagesOptions& options);

// Sum of the FilePmdMapped lines of the VMAs in `smaps` (the text of /proc/PID/smaps) that overlap
// [lo, hi), in bytes. Malformed lines are skipped.
uint64_t FilePmdMappedBytes(std::string_view smaps, uintptr_t lo, uintptr_t hi);

}  // namespace ember
