// Dispatch and validation for quant.h, plus the plain element types (f32, f16, bf16). The block codecs
// live in quant_legacy.cc (32-element blocks), quant_kquants.cc (q4_K/q5_K/q6_K super-blocks),
// quant_lowbit.cc (q2_K/q3_K) and quant_iquants.cc (the table-grid types iq4_nl, iq4_xs, mxfp4).
#include "format/quant.h"

#include <cmath>
#include <cstring>
#include <string>

#include "format/quant_internal.h"
#include "util/half.h"

namespace ember {
namespace {

using DequantFn = void (*)(const uint8_t*, float*, size_t);
using QuantFn = void (*)(const float*, uint8_t*, size_t);

struct Codec {
  GgmlType type;
  DequantFn dequant;
  QuantFn quant;  // nullptr: dequantize only
};

void DequantF32(const uint8_t* src, float* dst, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void QuantF32(const float* src, uint8_t* dst, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void DequantF16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = quant_internal::LoadHalf(src + 2 * i);
}
void QuantF16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) quant_internal::StoreHalf(dst + 2 * i, F32ToFp16(src[i]));
}

void DequantBF16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
}
void QuantBF16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) quant_internal::StoreHalf(dst + 2 * i, F32ToBf16(src[i]));
}

// The codecs take a count of blocks; for the plain types a block is one element.
constexpr Codec kCodecs[] = {
    {GgmlType::F32, DequantF32, QuantF32},
    {GgmlType::F16, DequantF16, QuantF16},
    {GgmlType::BF16, DequantBF16, QuantBF16},
    {GgmlType::Q4_0, quant_internal::DequantQ4_0, quant_internal::QuantQ4_0},
    {GgmlType::Q4_1, quant_internal::DequantQ4_1, quant_internal::QuantQ4_1},
    {GgmlType::Q5_0, quant_internal::DequantQ5_0, quant_internal::QuantQ5_0},
    {GgmlType::Q5_1, quant_internal::DequantQ5_1, quant_internal::QuantQ5_1},
    {GgmlType::Q8_0, quant_internal::DequantQ8_0, quant_internal::QuantQ8_0},
    {GgmlType::Q4_K, quant_internal::DequantQ4_K, quant_internal::QuantQ4_K},
    {GgmlType::Q5_K, quant_internal::DequantQ5_K, quant_internal::QuantQ5_K},
    {GgmlType::Q6_K, quant_internal::DequantQ6_K, quant_internal::QuantQ6_K},
    {GgmlType::Q2_K, quant_internal::DequantQ2_K, quant_internal::QuantQ2_K},
    {GgmlType::Q3_K, quant_internal::DequantQ3_K, quant_internal::QuantQ3_K},
    {GgmlType::IQ4_NL, quant_internal::DequantIQ4_NL, quant_internal::QuantIQ4_NL},
    {GgmlType::IQ4_XS, quant_internal::DequantIQ4_XS, quant_internal::QuantIQ4_XS},
    {GgmlType::MXFP4, quant_internal::DequantMXFP4, quant_internal::QuantMXFP4},
};

const Codec* FindCodec(GgmlType type) {
  for (const Codec& c : kCodecs)
    if (c.type == type) return &c;
  return nullptr;
}

std::string TypeLabel(GgmlType type) {
  if (!GgmlTypeInfo(static_cast<uint32_t>(type))) return "ggml type " + std::to_string(static_cast<uint32_t>(type));
  return GgmlTypeName(type);
}

// Looks up the codec and the block size, checking that n is whole blocks. `verb` names the operation.
Status Prepare(GgmlType type, size_t n, const char* verb, const Codec** codec, size_t* nblocks) {
  *codec = FindCodec(type);
  if (*codec == nullptr) return Unimplemented(std::string(verb) + " " + TypeLabel(type) + " is not supported");
  const uint32_t block = TypeInfo(type).block_elems;
  if (n % block != 0) {
    return InvalidArgument(std::string(verb) + " " + TypeLabel(type) + ": " + std::to_string(n) +
                           " elements is not a multiple of the block size " + std::to_string(block));
  }
  *nblocks = n / block;
  return Status::Ok();
}

}  // namespace

Status Dequantize(GgmlType type, const void* src, float* dst, size_t n) {
  const Codec* codec = nullptr;
  size_t nblocks = 0;
  EMBER_RETURN_IF_ERROR(Prepare(type, n, "dequantize", &codec, &nblocks));
  codec->dequant(static_cast<const uint8_t*>(src), dst, nblocks);
  return Status::Ok();
}

bool CanQuantize(GgmlType type) {
  const Codec* codec = FindCodec(type);
  return codec != nullptr && codec->quant != nullptr;
}

Status Quantize(GgmlType type, const float* src, void* dst, size_t n) {
  const Codec* codec = nullptr;
  size_t nblocks = 0;
  EMBER_RETURN_IF_ERROR(Prepare(type, n, "quantize to", &codec, &nblocks));
  if (codec->quant == nullptr) return Unimplemented("quantize to " + TypeLabel(type) + " is not supported");
  // Block types derive their scales from the block's extremes: one inf or NaN would poison the whole
  // block, so refuse such input (before writing anything). Plain float types store it as is.
  if (TypeInfo(type).block_elems > 1) {
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(src[i])) {
        return InvalidArgument("quantize to " + TypeLabel(type) + ": element " + std::to_string(i) +
                               " is not finite");
      }
    }
  }
  codec->quant(src, static_cast<uint8_t*>(dst), nblocks);
  return Status::Ok();
}

}  // namespace ember
