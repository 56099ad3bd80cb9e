// The quantization label of a GGUF file (library-internal): llama.cpp's general.file_type numbering
// (its LLAMA_FTYPE_* enum, which every converter writes), so a Q4_K_M file says "Q4_K_M" rather than the
// "Q4_K" its largest tensors happen to be.
#pragma once

#include <cstdint>
#include <string>

namespace ember::library {

// "Q4_K_M" for 15, "BF16" for 32; "" for a number the table does not know (retired or newer types).
std::string FileTypeName(int64_t file_type);

// A quantization name from elsewhere (a GGUF's general.file_type string, a config's quant_method) as
// the table shows it: ASCII upper case ("q4_k_m" -> "Q4_K_M").
std::string QuantLabel(std::string text);

}  // namespace ember::library
