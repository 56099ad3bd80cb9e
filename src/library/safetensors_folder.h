// A Hugging Face safetensors model folder in the library (library-internal): config.json beside one or
// more *.safetensors files. Listed with what its headers say, never runnable yet.
#pragma once

#include <string>
#include <vector>

#include "library/folder_walk.h"
#include "library/model_catalog.h"

namespace ember::library {

inline constexpr const char* kSafetensorsNotSupported = "safetensors folders are not supported yet";

// config.json and at least one *.safetensors file among a folder's entries (files or links to them).
bool IsSafetensorsFolder(const std::vector<DirEntry>& entries);

// The folder's row: arch and context from config.json, parameters and dtype from every *.safetensors
// header (mapped; only the header's bytes are read), size the sum of those files. Name and source are
// left to the caller; why_not is kSafetensorsNotSupported, plus the first file that could not be read.
ModelRecord DescribeSafetensorsFolder(const std::string& dir, const std::vector<DirEntry>& entries, Env* env);

}  // namespace ember::library
