#include "format/ggml_types.h"

#include <algorithm>
#include <cctype>

namespace ember {
namespace {

struct Row {
  uint32_t id;
  GgmlTypeTraits traits;
};

// Block geometry per the ggml block structs (QK_K = 256, K_SCALE_SIZE = 12).
constexpr Row kTypes[] = {
    {0, {"f32", 1, 4, true}},
    {1, {"f16", 1, 2, true}},
    {2, {"q4_0", 32, 18, true}},      // f16 d + 16 bytes of nibbles
    {3, {"q4_1", 32, 20, true}},      // f16 d, f16 m + 16 bytes
    {6, {"q5_0", 32, 22, true}},      // f16 d + 4 bytes high bits + 16 bytes
    {7, {"q5_1", 32, 24, true}},      // f16 d, f16 m + 4 + 16
    {8, {"q8_0", 32, 34, true}},      // f16 d + 32 int8
    {9, {"q8_1", 32, 36, false}},     // f16 d, f16 s + 32 int8
    {10, {"q2_K", 256, 84, true}},    // 16 scale|min bytes, 64 bytes of 2-bit quants, f16 d, f16 dmin
    {11, {"q3_K", 256, 110, true}},   // 32 high-bit bytes, 64 bytes of 2-bit quants, 12 scale bytes, f16 d
    {12, {"q4_K", 256, 144, true}},   // f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes
    {13, {"q5_K", 256, 176, true}},   // + 32 high-bit bytes
    {14, {"q6_K", 256, 210, true}},   // 128 ql, 64 qh, 16 int8 scales, f16 d
    {15, {"q8_K", 256, 292, false}},  // f32 d, 256 int8, 16 int16 bsums
    {20, {"iq4_nl", 32, 18, true}},   // f16 d + 16 bytes of 4-bit indexes into kIq4nlValues
    {23, {"iq4_xs", 256, 136, true}}, // f16 d, u16 scales_h, 4 scales_l bytes, 128 index bytes
    {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},
    {30, {"bf16", 1, 2, true}},
    {39, {"mxfp4", 32, 17, true}},    // e8m0 scale byte + 16 bytes of 4-bit fp4 (e2m1) codes
};

}  // namespace

std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t raw_type) {
  for (const Row& r : kTypes)
    if (r.id == raw_type) return r.traits;
  return std::nullopt;
}

const char* GgmlTypeName(GgmlType t) {
  auto info = GgmlTypeInfo(static_cast<uint32_t>(t));
  return info ? info->name : "unknown";
}

std::optional<GgmlType> GgmlTypeFromName(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const Row& r : kTypes) {
    std::string n = r.traits.name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    if (n == lower) return static_cast<GgmlType>(r.id);
  }
  return std::nullopt;
}

}  // namespace ember
