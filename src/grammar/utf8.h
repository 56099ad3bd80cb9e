// The few UTF-8 and text-position helpers the parser and matchers share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::grammar {

// Decodes one well-formed UTF-8 scalar value at the start of `s` (no overlongs, no surrogates, at most
// U+10FFFF) into *cp; returns its length, or 0 when `s` does not start with one.
size_t DecodeUtf8(std::string_view s, uint32_t* cp);

// The ranges minus U+D800..U+DFFF (sorted, disjoint input and output).
std::vector<std::pair<uint32_t, uint32_t>> RemoveSurrogates(const std::vector<std::pair<uint32_t, uint32_t>>& r);

// "L:C", line and column (1-based; columns count bytes), of byte offset `pos` in `text`.
std::string LineColumn(std::string_view text, size_t pos);

}  // namespace ember::grammar
