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

StatusOr<PackedWeights> PackedWeights::Pack(std::span<WeightView* const> views, ThreadPool& pool,
                                            const std::function<void(const WeightView&)>& packed_one) {
  std::vector<std::pair<WeightView*, uint64_t>> jobs;  // view, offset of its copy
  uint64_t total = 0, exact = 0;
  for (WeightView* w : views) {
    const uint64_t bytes = PackedCopyBytes(*w);
    if (bytes == 0) continue;
    jobs.emplace_back(w, total);
    total += (bytes + kAlign - 1) / kAlign * kAlign;
    exact += bytes;
  }
  PackedWeights out;
  if (jobs.empty()) return out;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (total + page - 1) / page * page;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return ResourceExhausted("packed weights: cannot map " + std::to_string(mapped) + " bytes: " + std::strerror(errno));
  }
  out.base_ = base;
  out.mapped_ = mapped;
  (void)madvise(base, mapped, MADV_HUGEPAGE);  // fewer TLB misses streaming them; advisory only
  for (const auto& job : jobs) {
    WeightView* w = job.first;  // not a structured binding: clang 14 (make thread-safety) cannot capture one
    uint8_t* dst = static_cast<uint8_t*>(base) + job.second;
    pool.ParallelForChunks(PackedGroups(*w), 16, [&](int64_t g0, int64_t g1, int) { PackGroups(*w, g0, g1, dst); });
    w->packed = dst;
    if (packed_one) packed_one(*w);
  }
  out.bytes_ = exact;
  out.tensors_ = static_cast<int>(jobs.size());
  return out;
}

uint64_t PackedCopyBytes(const WeightView& w) { return PackedKernelAvailable(w.type) ? PackedBytes(w) : 0; }

uint64_t PackedSourceBytes(const WeightView& w) {
  return w.packed == nullptr ? 0 : static_cast<uint64_t>(PackedGroups(w)) * kPackRows * w.row_bytes;
}

}  // namespace ember::kernels
