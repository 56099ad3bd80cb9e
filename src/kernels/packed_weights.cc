#include "kernels/packed_weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/repack.h"

namespace ember::kernels {
namespace {

// Each copy starts on a cache line (the kernels' 64-byte vectors never straddle two).
constexpr uint64_t kAlign = 64;

}  // namespace

PackedWeights::PackedWeights(PackedWeights&& o) noexcept { *this = std::move(o); }

PackedWeights& PackedWeights::operator=(PackedWeights&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) munmap(base_, mapped_);
    base_ = std::exchange(o.base_, nullptr);
    mapped_ = std::exchange(o.mapped_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
    tensors_ = std::exchange(o.tensors_, 0);
  }
  return *this;
}

PackedWeights::~PackedWeights() {
  if (base_ != nullptr) munmap(base_, mapped_);
}

StatusOr<PackedWeights> PackedWeights::Pack(std::span<WeightView* const> views, ThreadPool& pool) {
  struct Job {
    WeightView* w;
    uint64_t offset;
    int64_t first_group;  // in the global group numbering the pool splits
  };
  std::vector<Job> jobs;
  uint64_t total = 0, exact = 0;
  int64_t groups = 0;
  for (WeightView* w : views) {
    if (!PackedKernelAvailable(w->type) || PackedGroups(*w) == 0) continue;
    jobs.push_back({w, total, groups});
    total += (PackedBytes(*w) + kAlign - 1) / kAlign * kAlign;
    exact += PackedBytes(*w);
    groups += PackedGroups(*w);
  }
  PackedWeights out;
  if (jobs.empty()) return out;
  const long page = sysconf(_SC_PAGESIZE);
  const size_t mapped = (total + static_cast<uint64_t>(page) - 1) / static_cast<uint64_t>(page) * static_cast<uint64_t>(page);
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return ResourceExhausted("packed weights: cannot map " + std::to_string(mapped) + " bytes: " + std::strerror(errno));
  }
  out.base_ = base;
  out.mapped_ = mapped;
  (void)madvise(base, mapped, MADV_HUGEPAGE);  // fewer TLB misses streaming them; advisory only
  uint8_t* bytes = static_cast<uint8_t*>(base);
  // Groups in chunks claimed from a shared counter, cut at the tensors' boundaries.
  pool.ParallelForChunks(groups, 64, [&](int64_t g0, int64_t g1, int) {
    for (const Job& j : jobs) {
      const int64_t b = std::max(g0, j.first_group), e = std::min(g1, j.first_group + PackedGroups(*j.w));
      if (b < e) PackGroups(*j.w, b - j.first_group, e - j.first_group, bytes + j.offset);
    }
  });
  for (const Job& j : jobs) j.w->packed = bytes + j.offset;
  out.bytes_ = exact;
  out.tensors_ = static_cast<int>(jobs.size());
  return out;
}

}  // namespace ember::kernels
