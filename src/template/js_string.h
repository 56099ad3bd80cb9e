// String helpers that reproduce what JavaScript does to a string, because ember's reference renderer
// (@huggingface/jinja) runs on JavaScript: its `trim` strips JS whitespace (Unicode spaces included), its
// `length` counts UTF-16 code units, numbers print in JS's shortest round-trip form. Strings here are
// UTF-8; invalid bytes are treated as single code points so nothing ever fails or crashes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::jinja {

// True for the code points JavaScript's /\s/ and String.prototype.trim treat as whitespace.
bool IsJsSpace(uint32_t cp);

// Decodes the code point starting at s[*pos] and advances *pos past it (invalid bytes: one byte each).
uint32_t NextCodePoint(std::string_view s, size_t* pos);
void AppendUtf8(uint32_t cp, std::string* out);

std::string JsTrim(std::string_view s);        // String.prototype.trim
std::string JsTrimStart(std::string_view s);   // String.prototype.trimStart
std::string JsTrimEnd(std::string_view s);     // String.prototype.trimEnd

// Number of UTF-16 code units (String.prototype.length).
int64_t Utf16Length(std::string_view s);
// One string per code point (Array.from(string)).
std::vector<std::string> SplitCodePoints(std::string_view s);

// ASCII-only case mapping: chat templates upper/lower role names and keywords, never user text in a
// way that needs Unicode case tables (documented divergence from JS for non-ASCII letters).
std::string AsciiUpper(std::string_view s);
std::string AsciiLower(std::string_view s);
// /\b\w/g -> upper case: the first ASCII word character after a non-word character.
std::string JsTitle(std::string_view s);

// Number -> string exactly as JavaScript's String(number) (shortest round trip, JS exponent rules).
std::string JsNumberToString(double v);

// JSON.stringify(string), optionally escaping every code unit >= 0x7f as \uXXXX (ensure_ascii).
std::string JsonQuote(std::string_view s, bool ensure_ascii);

}  // namespace ember::jinja
