// Where LM Studio keeps its models (library-internal; fuzzed: model_store_fuzz). Its home is ~/.lmstudio
// unless ~/.lmstudio-home-pointer names another; models live in <home>/models unless settings.json's
// "downloadsFolder" moved them. Both files are outside input: bounded, parsed without exceptions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/status.h"

namespace ember::library {

inline constexpr size_t kMaxLmStudioSettingsBytes = size_t{4} << 20;
inline constexpr size_t kMaxHomePointerBytes = 4096;

// settings.json's "downloadsFolder": "" when absent or null; an error when the text is not a JSON
// object or the key is not a string.
StatusOr<std::string> ParseLmStudioDownloadsFolder(std::string_view settings_json);

// The home pointer's one absolute path, surrounding whitespace trimmed; "" when the text is anything
// else (empty, relative, several lines, a NUL byte, too long).
std::string ParseLmStudioHomePointer(std::string_view text);

}  // namespace ember::library
