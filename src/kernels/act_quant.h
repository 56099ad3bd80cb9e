// Activation rows converted to a weight type's "dot type", once per MatMul call (ggml's vec_dot_type).
// Internal to kernels/.
#pragma once

#include <cstdint>
#include <vector>

#include "format/ggml_types.h"

namespace ember::kernels {

enum class DotType {
  kF32,   // F32 weights: activations as they are
  kF16,   // F16 weights: activations rounded to fp16 (kept as f32 values)
  kBF16,  // BF16 weights: activations rounded to bf16 (kept as f32 values)
  kQ8_0,  // Q8_0/Q4_0/Q5_0/IQ4_NL/MXFP4: 32-blocks, d = fp16(amax/127), q = rint(x * 127/amax)
  kQ8_1,  // Q4_1/Q5_1: as Q8_0 plus s = fp16(d * sum(q))
  kQ8_K,  // K-quants (Q2_K..Q6_K) and IQ4_XS: 256-blocks, f32 d, q = min(127, rint(-127/max * x)), sums per 16
};

DotType DotTypeOf(GgmlType weight_type);

// One token's converted activations: pointers into an ActBatch. Block scales are stored as f32
// (fp16 scales already widened, so a kernel never converts them per weight row).
struct ActRow {
  const float* f = nullptr;      // kF32/kF16/kBF16: n_in values
  const int8_t* q = nullptr;     // quantized: n_in values
  const float* d = nullptr;      // per block (32 or 256)
  const float* s = nullptr;      // kQ8_1: per 32-block, f32(fp16(d * sum q))
  const int32_t* sum = nullptr;  // kQ8_0/kQ8_1: sum of q per 32-block; kQ8_K: per 16 elements
};

// All n_tok rows, contiguous per field.
class ActBatch {
 public:
  // Converts x (n_tok * n_in floats); n_in must be a multiple of the dot type's block (32 or 256).
  // Each row is converted independently of the others (batch invariance).
  void Convert(DotType type, const float* x, int64_t n_tok, int64_t n_in);
  // Converts only rows [t0, t1) after Resize (lets a thread pool split the work).
  void Resize(DotType type, int64_t n_tok, int64_t n_in);
  void ConvertRows(const float* x, int64_t t0, int64_t t1);
  ActRow Row(int64_t t) const;
  DotType type() const { return type_; }
  int64_t n_in() const { return n_in_; }

 private:
  DotType type_ = DotType::kF32;
  int64_t n_in_ = 0, blocks_ = 0, sums_ = 0;
  std::vector<float> f_, d_, s_;
  std::vector<int8_t> q_;
  std::vector<int32_t> sum_;
};

}  // namespace ember::kernels
