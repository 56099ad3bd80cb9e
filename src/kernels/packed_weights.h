// The packed copies of a model's matmul weights (kernels/repack.h), made once at load so prefill can use
// the zmm GEMM kernels (gemm_packed.h) without transposing weights on every call.
//
// Memory: one anonymous mapping holding every copy (transparent huge pages advised), exactly the bytes
// of the rows it covers (a permutation, nothing decoded). MatMul then reads those rows only from the copy,
// decode included, so the loader may drop them from the file mapping (Engine: madvise DONTNEED): the copy
// replaces the mapped pages rather than adding to them, at the price of private memory instead of shared
// page cache. Thread-safety: immutable after Pack.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "util/status.h"

namespace ember::kernels {

class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(PackedWeights&& o) noexcept;
  PackedWeights& operator=(PackedWeights&& o) noexcept;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  ~PackedWeights();

  // Packs every view whose type MatMul runs packed on this CPU (PackedKernelAvailable) and that has at
  // least one 16-row group, and points its `packed` at the copy; other views are left as they are.
  // One view at a time, its groups split over `pool` (owner thread only); `packed_one`, if given, is
  // called after each (so a caller can drop that view's source pages before the next one grows the
  // copy: peak memory stays one view above the final). Fails only when the memory cannot be mapped.
  static StatusOr<PackedWeights> Pack(std::span<WeightView* const> views, ThreadPool& pool,
                                      const std::function<void(const WeightView&)>& packed_one = nullptr);

  uint64_t bytes() const { return bytes_; }  // bytes of all copies (the mapping is page-rounded)
  int tensors() const { return tensors_; }

 private:
  void* base_ = nullptr;
  size_t mapped_ = 0;
  uint64_t bytes_ = 0;
  int tensors_ = 0;
};

// Bytes of the copy Pack would make of w on this CPU; 0 when it would make none (no packed kernel for
// the type here, or fewer than 16 rows).
uint64_t PackedCopyBytes(const WeightView& w);

// How many bytes from w.data on MatMul reads from w.packed instead (its whole 16-row groups); 0 when w
// has no packed copy.
uint64_t PackedSourceBytes(const WeightView& w);

}  // namespace ember::kernels
