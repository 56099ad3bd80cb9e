// GBNF text pieces the JSON Schema compiler emits (internal to grammar/): quoted literals, character
// classes, and the JSON-string-content form of a set of characters (a character that JSON must escape
// becomes its escape sequence, so every sentence stays valid JSON).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::grammar::schema_text {

// `"..."` matching exactly `bytes` (UTF-8 passes through; quotes, backslashes and controls are escaped).
std::string Literal(std::string_view bytes);

// A set of Unicode code points: the union of `ranges` (inclusive), or its complement when `negated`.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;

  bool Contains(uint32_t cp) const;
  void Add(uint32_t lo, uint32_t hi) { ranges.emplace_back(lo, hi); }
};

// One unit of JSON string content (a plain character or an escape) whose decoded character is in `set`.
// Characters JSON requires escaped (", \, U+0000..U+001F) are emitted as their escapes; the empty set
// yields an empty string (the caller treats it as "no character matches").
std::string JsonContentUnit(const CharSet& set);

// A code point inside [...]: alphanumerics as themselves, everything else as \xHH / \uHHHH / \UHHHHHHHH.
std::string ClassChar(uint32_t c);

// Code points of UTF-8 text (an invalid byte stands for itself), and back.
std::vector<uint32_t> DecodeUtf8(std::string_view s);
std::string EncodeUtf8(uint32_t c);

// Sanitized fragment for a rule name (GBNF names are [a-zA-Z0-9-]).
std::string RuleNamePart(std::string_view s);

}  // namespace ember::grammar::schema_text
