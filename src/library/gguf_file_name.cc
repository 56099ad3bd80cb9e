#include "library/gguf_file_name.h"

#include <cctype>

namespace ember::library {
namespace {

constexpr std::string_view kExt = ".gguf";

// Exactly five decimal digits.
std::optional<int> FiveDigits(std::string_view s) {
  if (s.size() != 5) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

bool HasGgufExtension(std::string_view name) {
  if (name.size() <= kExt.size()) return false;
  const std::string_view tail = name.substr(name.size() - kExt.size());
  for (size_t i = 0; i < kExt.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(tail[i])) != kExt[i]) return false;
  }
  return true;
}

std::string GgufStem(std::string_view name) {
  return std::string(HasGgufExtension(name) ? name.substr(0, name.size() - kExt.size()) : name);
}

std::optional<SplitName> ParseSplitName(std::string_view name) {
  if (!HasGgufExtension(name)) return std::nullopt;
  const std::string_view stem = name.substr(0, name.size() - kExt.size());
  // "<stem>-NNNNN-of-MMMMM": 15 characters of suffix after a non-empty stem.
  constexpr size_t kSuffix = 15;
  if (stem.size() <= kSuffix) return std::nullopt;
  const std::string_view suffix = stem.substr(stem.size() - kSuffix);
  if (suffix[0] != '-' || suffix.substr(6, 4) != "-of-") return std::nullopt;
  const std::optional<int> index = FiveDigits(suffix.substr(1, 5));
  const std::optional<int> count = FiveDigits(suffix.substr(10, 5));
  if (!index || !count || *index < 1 || *index > *count) return std::nullopt;
  return SplitName{std::string(stem.substr(0, stem.size() - kSuffix)), *index, *count};
}

}  // namespace ember::library
