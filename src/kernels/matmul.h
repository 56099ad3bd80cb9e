// Matrix multiplication of a GGUF weight by a batch of activation rows: y = x · Wᵀ.
//
// Numerics mirror ggml's CPU backend so ember's logits track llama.cpp's: the activations are first
// converted to the weight's "dot type" (see DotTypeOf in act_quant.h: Q8_0 blocks for Q8_0/Q4_0/Q5_0/
// IQ4_NL/MXFP4, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants and IQ4_XS, fp16-rounded for F16, bf16-rounded
// for BF16, plain f32 for F32), then each block's integer dot product is scaled by the block scales and accumulated in f32.
//
// Batch invariance (docs/cache-spec.md §6): y[t, o] is bitwise identical whatever n_tok and whatever the
// pool's thread count, because every (t, o) is computed by one fixed sequence of operations (same
// SIMD lane split, same horizontal-reduction order) whether it is part of a prefill tile or a decode
// step. MatMul (SIMD, runtime-dispatched) and MatMulReference (scalar) are bitwise identical too: the
// scalar code emulates the SIMD lane order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"
#include "kernels/thread_pool.h"
#include "util/status.h"

namespace ember::kernels {

// A 2-D GGUF weight: ne[0] = n_in (contiguous), ne[1] = n_out. Row o starts at data + o * row_bytes.
// Non-owning; the bytes (usually an mmap of the model file) must outlive every call that uses it.
struct WeightView {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  // Optional: the same rows' full 16-row groups repacked for the zmm GEMM kernels (kernels/repack.h;
  // made at load by PackedWeights). MatMul then reads those rows from here, for every token count, and
  // only the last n_out % 16 rows from `data`; results are bitwise the same either way. Non-owning.
  const uint8_t* packed = nullptr;
};

// Validates a view once, at model load: supported type, n_in a positive multiple of the block size,
// n_out > 0, row_bytes >= RowBytes(type, n_in), non-null data. MatMul assumes a checked view.
Status CheckWeight(const WeightView& w);

// y[t * n_out + o] = dot(row o of W, x[t * n_in .. + n_in]) for t in [0, n_tok), o in [0, n_out).
// x: n_tok * n_in floats; y: n_tok * n_out floats (must not alias x). n_tok <= 0 does nothing.
// Precondition: CheckWeight(w).ok(). Uses `pool` from its owner thread (see ThreadPool).
void MatMul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);

// Several weights applied to the same activations (q/k/v, gate/up): outs[i].y = x · outs[i].wᵀ.
// Bitwise identical to one MatMul per weight; when all weights share a dot type and n_in, x is
// converted once and all their rows run in one parallel region (one handoff instead of `count`).
struct MatMulOut {
  const WeightView* w = nullptr;
  float* y = nullptr;
};
void MatMulShared(const MatMulOut* outs, int count, const float* x, int64_t n_tok, ThreadPool& pool);

// Many weights, each applied to its own run of rows of one activation matrix x [n_rows][n_in] (a mixture
// of experts: each expert over the rows routed to it): groups[i].y [n_tok][n_out] = rows [t0, t0 + n_tok)
// of x · groups[i].wᵀ. Bitwise identical to one MatMul per group; when all weights share a dot type and
// n_in and none has a packed copy (expert matrices have none), x is converted once and all groups' rows
// run in one parallel region. The y's must not alias x or each other.
struct MatMulGroup {
  const WeightView* w = nullptr;
  int64_t t0 = 0;
  int64_t n_tok = 0;
  float* y = nullptr;
};
void MatMulGrouped(const MatMulGroup* groups, int count, const float* x, int64_t n_rows, ThreadPool& pool);

// Scalar, single-threaded; bitwise identical to MatMul (whichever kernel tier it uses). For tests;
// MatMul falls back to the same scalar kernels on CPUs without AVX2+FMA+F16C.
void MatMulReference(const WeightView& w, const float* x, int64_t n_tok, float* y);

// Whether MatMul may use the multi-row GEMM kernels for prefill (default: yes). Results are bitwise the
// same either way; this exists so benchmarks and tests can compare the two paths in one process. Set it
// only while no MatMul runs.
void SetGemmEnabled(bool enabled);

// Whether MatMul may use the VNNI build of the GEMM kernels where the CPU and ceiling allow it
// (default: yes); off, it uses the AVX2 build. Bitwise the same; for in-process comparisons like
// SetGemmEnabled, and set the same way.
void SetGemmVnniEnabled(bool enabled);

// Whether MatMul may use the packed GEMM kernels for weights that have a packed copy (default: yes);
// off, it reads those weights' original rows like any other. Bitwise the same; set like SetGemmEnabled.
void SetPackedGemmEnabled(bool enabled);

// Whether MatMul on this CPU (under the EMBER_KERNELS ceiling) has a packed kernel for `type`: whether a
// packed copy of such a weight would be used. The test toggles above do not change the answer.
bool PackedKernelAvailable(GgmlType type);

// Which kernel tier MatMul uses for Q8_0 weights on this CPU: "avx512", "avx2" or "scalar" (the
// best the CPU runs, capped by EMBER_KERNELS=scalar|avx2|avx512; see dot_kernels.h).
const char* MatMulBackendName();

}  // namespace ember::kernels
