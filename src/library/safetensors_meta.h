// The two files that describe a Hugging Face safetensors model folder, parsed (library-internal and
// fuzzed: model_store_fuzz): a *.safetensors file's JSON header (tensor names, dtypes, shapes) and
// config.json (architecture, context). Both are outside input: sizes are bounded before anything is
// read, JSON depth by ParseJsonLimited, numbers checked for type and range; errors are values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "util/status.h"

namespace ember::library {

// The format's own reference reader refuses headers above 100 MB; no real header is near that.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;
inline constexpr uint64_t kMaxSafetensorsTensors = uint64_t{1} << 20;
inline constexpr size_t kMaxSafetensorsDims = 8;
inline constexpr size_t kMaxConfigBytes = size_t{4} << 20;

struct SafetensorsSummary {
  uint64_t tensors = 0;
  uint64_t parameters = 0;                        // the sum of every tensor's element count
  std::map<std::string, uint64_t> bytes_by_dtype;  // "BF16" -> bytes (from data_offsets)
};

// `header`: the JSON text after the file's 8-byte length. Each tensor must be an object with a string
// dtype, a shape of at most kMaxSafetensorsDims non-negative integers, and data_offsets [begin, end] with
// begin <= end; "__metadata__" is skipped. Totals are checked for overflow.
StatusOr<SafetensorsSummary> ParseSafetensorsHeader(std::string_view header);
// The header's length from the file's first 8 bytes (little-endian), checked against the file size and
// kMaxSafetensorsHeaderBytes.
StatusOr<uint64_t> SafetensorsHeaderLength(const uint8_t* first8, uint64_t file_size);

// The dtype holding the most bytes ("" when there are no tensors).
std::string DominantDtype(const SafetensorsSummary& s);

struct HfModelConfig {
  std::string model_type;    // "qwen3", "llama"; "" when absent
  std::string architecture;  // architectures[0], "Qwen3ForCausalLM"; "" when absent
  int64_t context_length = 0;  // max_position_embeddings (or text_config's); 0 when absent
  std::string quant_method;  // quantization_config.quant_method ("gptq", "awq", "mxfp4"); "" when absent
};

// A key present with the wrong type is an error naming it; absent keys are empty.
StatusOr<HfModelConfig> ParseHfConfig(std::string_view json);

}  // namespace ember::library
