// What a GGUF file's name says (library-internal): whether it is one, its stem, and whether it is one
// part of a split model ("<stem>-00001-of-00003.gguf", the naming llama.cpp's gguf-split writes).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ember::library {

// Ends in ".gguf", any case, with something before it.
bool HasGgufExtension(std::string_view file_name);
// The name without ".gguf" (a name without it is returned whole).
std::string GgufStem(std::string_view file_name);

struct SplitName {
  std::string stem;  // without the "-00001-of-00003" suffix
  int index = 0;     // 1-based
  int count = 0;
};
// nullopt unless the name is "<stem>-NNNNN-of-MMMMM.gguf" with a non-empty stem, exactly five digits each
// and 1 <= NNNNN <= MMMMM.
std::optional<SplitName> ParseSplitName(std::string_view file_name);

}  // namespace ember::library
